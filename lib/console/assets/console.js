/* global document, navigator, window */
// The settings console's behaviour, served as a file so the Content-Security-Policy needs no
// inline script: times in the reader's time zone, focus on the first field in error, the copy
// button of a new key, and the usage chart (Chart.js, from its package).
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

var localiseTimes = function () {
  document.querySelectorAll('time[datetime]').forEach(function (element) {
    var instant = new Date(element.getAttribute('datetime'));
    if (isNaN(instant.getTime())) return;
    element.textContent = (element.hasAttribute('data-seconds') ? localSecond : localTime).format(instant);
    element.title = instant.toISOString() + ' (UTC)';
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
    chart.bucket === 'hour' ? { month: 'short', day: 'numeric', hour: '2-digit' } : { month: 'short', day: 'numeric' },
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
        x: { stacked: true, title: { display: true, text: chart.bucket === 'hour' ? 'Hour (your time)' : 'Day' } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'Calls' }, ticks: { precision: 0 } },
      },
    },
  });
};

document.addEventListener('DOMContentLoaded', function () {
  localiseTimes();
  var invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) invalid.focus();
  copyButtons();
  usageChart();
});
