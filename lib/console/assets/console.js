/* global document, navigator, window */
// The settings console's behaviour, served as a file so the Content-Security-Policy needs no
// inline script: times in the reader's time zone (the expiry typed in it too), focus on the
// first field in error, the copy button of a new key, filters that apply as they change, and
// the usage chart (Chart.js).
'use strict';

// One format for every time: the reader's zone, named; the UTC instant stays in the title.
var localTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  timeZoneName: 'short',
});

// A call's time, to the second.
var localSecond = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

// A day the rollups count in UTC: that UTC date, labelled so.
var utcDay = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

var formatTime = function (element, instant) {
  if (element.hasAttribute('data-utc-day')) return utcDay.format(instant) + ' (UTC)';
  return (element.hasAttribute('data-seconds') ? localSecond : localTime).format(instant);
};

var localiseTimes = function (root) {
  (root || document).querySelectorAll('time[datetime]').forEach(function (element) {
    var instant = new Date(element.getAttribute('datetime'));
    if (isNaN(instant.getTime())) return;
    element.textContent = formatTime(element, instant);
    element.title = instant.toISOString() + ' (UTC)';
  });
};

var pad = function (n) {
  return String(n).padStart(2, '0');
};

// The reader's zone as the times name it ("GMT+5:30").
var zoneName = function (instant) {
  var part = localTime.formatToParts(instant).find(function (p) {
    return p.type === 'timeZoneName';
  });
  return part ? part.value : 'your time';
};

// A datetime-local field sent in UTC (`data-utc`) shown and typed in the reader's zone: its
// value becomes local wall time, its label names the zone, and the form says which zone it is
// in (`zone`), so the console reads it there. Without this script the field stays UTC.
var localiseTimeFields = function () {
  document.querySelectorAll('input[type="datetime-local"][data-utc]').forEach(function (input) {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!zone || !input.form) return;
    if (input.value) {
      var instant = new Date(input.value + 'Z');
      if (!isNaN(instant.getTime())) {
        input.value =
          instant.getFullYear() +
          '-' +
          pad(instant.getMonth() + 1) +
          '-' +
          pad(instant.getDate()) +
          'T' +
          pad(instant.getHours()) +
          ':' +
          pad(instant.getMinutes());
      }
    }
    var zoneField = document.createElement('input');
    zoneField.type = 'hidden';
    zoneField.name = 'zone';
    zoneField.value = zone;
    input.form.appendChild(zoneField);
    var label = input.labels && input.labels[0];
    var zoneText = label && label.querySelector('[data-zone]');
    if (zoneText) zoneText.textContent = 'your time, ' + zoneName(new Date());
  });
};

var copyButtons = function () {
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      var status = document.getElementById('copy-status');
      var say = function (text) {
        if (status) status.textContent = text;
      };
      if (!source) return;
      navigator.clipboard.writeText(source.textContent).then(
        function () {
          say('Copied to the clipboard.');
        },
        function () {
          // No clipboard access: select the value so Ctrl-C copies it.
          var range = document.createRange();
          range.selectNodeContents(source);
          window.getSelection().removeAllRanges();
          window.getSelection().addRange(range);
          say('Selected: press Ctrl-C (or Cmd-C) to copy.');
        },
      );
    });
  });
};

var usageChart = function () {
  var canvas = document.getElementById('usage-chart');
  var data = document.getElementById('usage-chart-data');
  if (!canvas || !data || !window.Chart) return;
  var chart = JSON.parse(data.textContent);
  var colours = { '2xx': '#2e7d32', '3xx': '#1565c0', '4xx': '#ef6c00', '5xx': '#c62828' };
  var bucketLabel = new Intl.DateTimeFormat(
    undefined,
    chart.bucket === 'hour'
      ? { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }
      : { month: 'short', day: 'numeric', timeZone: 'UTC' },
  );
  new window.Chart(canvas, {
    type: 'bar',
    data: {
      labels: chart.starts.map(function (start) {
        return bucketLabel.format(new Date(start));
      }),
      datasets: Object.keys(colours).map(function (cls) {
        return { label: cls, data: chart.counts[cls], backgroundColor: colours[cls] };
      }),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: {
          stacked: true,
          title: { display: true, text: chart.bucket === 'hour' ? 'Hour (your time)' : 'Day (UTC)' },
        },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'Calls' }, ticks: { precision: 0 } },
      },
    },
  });
};

// A filter form that applies as it changes (`data-auto-filter`: the id of the part of the page
// it refreshes): the page is fetched with the form's query and that part swapped in, so the
// search field keeps its focus. Its submit button is only for a browser without this script.
var autoFilters = function () {
  document.querySelectorAll('form[data-auto-filter]').forEach(function (form) {
    var regionId = form.getAttribute('data-auto-filter');
    var button = form.querySelector('button[type="submit"]');
    var status = form.querySelector('[data-filter-status]');
    var timer;
    var latest = 0;
    if (button) button.hidden = true;
    var apply = function () {
      var url = form.action + '?' + new window.URLSearchParams(new window.FormData(form)).toString();
      var ticket = (latest += 1);
      window
        .fetch(url, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
        .then(function (response) {
          if (!response.ok) throw new Error(String(response.status));
          // Where a redirect ended: a whole key value searched for is answered with its key id.
          url = response.url || url;
          return response.text();
        })
        .then(function (text) {
          if (ticket !== latest) return;
          var fresh = new window.DOMParser().parseFromString(text, 'text/html').getElementById(regionId);
          var region = document.getElementById(regionId);
          if (!fresh || !region) return window.location.assign(url);
          region.replaceWith(document.importNode(fresh, true));
          localiseTimes(document.getElementById(regionId));
          window.history.replaceState(null, '', url);
          var summary = document.querySelector('#' + regionId + ' caption, #' + regionId + ' .empty');
          if (status && summary) status.textContent = summary.textContent.replace(/\s+/g, ' ').trim();
        })
        .catch(function () {
          // The page says what went wrong (a 400 for a value too long, a lost session).
          window.location.assign(url);
        });
    };
    form.addEventListener('input', function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(apply, 250);
    });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      window.clearTimeout(timer);
      apply();
    });
  });
};

document.addEventListener('DOMContentLoaded', function () {
  localiseTimes();
  localiseTimeFields();
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) invalid.focus();
  copyButtons();
  autoFilters();
  usageChart();
});
