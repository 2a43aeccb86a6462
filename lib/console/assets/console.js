/* global document, navigator, window, fetch, DOMParser, FormData, URLSearchParams */
// The settings console's behaviour, served as a file so the Content-Security-Policy needs no
// inline script: times in the reader's time zone (the expiry typed in it too), focus on the
// first field in error, the copy button of a new key, filters that apply as they change, and
// the usage chart (Chart.js).
'use strict';

// One format for every time: the reader's zone, named; the UTC instant stays in the title.
const MINUTE = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' };
const localTime = new Intl.DateTimeFormat(undefined, { ...MINUTE, timeZoneName: 'short' });
// A call's time, to the second.
const localSecond = new Intl.DateTimeFormat(undefined, { ...MINUTE, second: '2-digit', timeZoneName: 'short' });
// A day the rollups count in UTC: that UTC date, labelled so.
const utcDay = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

const formatTime = (element, instant) => {
  if (element.hasAttribute('data-utc-day')) return `${utcDay.format(instant)} (UTC)`;
  return (element.hasAttribute('data-seconds') ? localSecond : localTime).format(instant);
};

const localiseTimes = (root = document) => {
  for (const element of root.querySelectorAll('time[datetime]')) {
    const instant = new Date(element.getAttribute('datetime'));
    if (isNaN(instant.getTime())) continue;
    element.textContent = formatTime(element, instant);
    element.title = `${instant.toISOString()} (UTC)`;
  }
};

// A datetime-local field sent in UTC (`data-utc`) shown and typed in the reader's zone: its
// value becomes local wall time, its label names the zone ("GMT+5:30", as the times do), and the
// form says which zone it is in (`zone`), so the console reads it there. Without this script the
// field stays UTC.
const localiseTimeFields = () => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  for (const input of document.querySelectorAll('input[type="datetime-local"][data-utc]')) {
    if (!zone || !input.form) continue;
    const instant = new Date(`${input.value}Z`);
    if (input.value && !isNaN(instant.getTime())) {
      input.value = new Date(instant.getTime() - instant.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    }
    const zoneField = Object.assign(document.createElement('input'), { type: 'hidden', name: 'zone', value: zone });
    input.form.appendChild(zoneField);
    const zoneText = input.labels?.[0]?.querySelector('[data-zone]');
    const name = localTime.formatToParts(new Date()).find((p) => p.type === 'timeZoneName')?.value;
    if (zoneText) zoneText.textContent = `your time, ${name ?? 'your time'}`;
  }
};

const copyButtons = () => {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', () => {
      const source = document.getElementById(button.getAttribute('data-copy'));
      const status = document.getElementById('copy-status');
      const say = (text) => status && (status.textContent = text);
      if (!source) return;
      navigator.clipboard.writeText(source.textContent).then(
        () => say('Copied to the clipboard.'),
        () => {
          // No clipboard access: select the value so Ctrl-C copies it.
          window.getSelection().selectAllChildren(source);
          say('Selected: press Ctrl-C (or Cmd-C) to copy.');
        },
      );
    });
  }
};

const usageChart = () => {
  const canvas = document.getElementById('usage-chart');
  const data = document.getElementById('usage-chart-data');
  if (!canvas || !data || !window.Chart) return;
  const chart = JSON.parse(data.textContent);
  const colours = { '2xx': '#2e7d32', '3xx': '#1565c0', '4xx': '#ef6c00', '5xx': '#c62828' };
  const hourly = chart.bucket === 'hour';
  const bucketLabel = new Intl.DateTimeFormat(
    undefined,
    hourly
      ? { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }
      : { month: 'short', day: 'numeric', timeZone: 'UTC' },
  );
  new window.Chart(canvas, {
    type: 'bar',
    data: {
      labels: chart.starts.map((start) => bucketLabel.format(new Date(start))),
      datasets: Object.entries(colours).map(([cls, colour]) => ({
        label: cls,
        data: chart.counts[cls],
        backgroundColor: colour,
      })),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { stacked: true, title: { display: true, text: hourly ? 'Hour (your time)' : 'Day (UTC)' } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'Calls' }, ticks: { precision: 0 } },
      },
    },
  });
};

// A filter form that applies as it changes (`data-auto-filter`: the id of the part of the page
// it refreshes): the page is fetched with the form's query and that part swapped in, so the
// search field keeps its focus. Its submit button is only for a browser without this script.
const autoFilters = () => {
  for (const form of document.querySelectorAll('form[data-auto-filter]')) {
    const regionId = form.getAttribute('data-auto-filter');
    const button = form.querySelector('button[type="submit"]');
    const status = form.querySelector('[data-filter-status]');
    let timer;
    let latest = 0;
    if (button) button.hidden = true;
    const apply = async () => {
      let url = `${form.action}?${new URLSearchParams(new FormData(form))}`;
      const ticket = (latest += 1);
      try {
        const response = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
        if (!response.ok) throw new Error(String(response.status));
        // Where a redirect ended: a whole key value searched for is answered with its key id.
        url = response.url || url;
        const text = await response.text();
        if (ticket !== latest) return;
        const fresh = new DOMParser().parseFromString(text, 'text/html').getElementById(regionId);
        const region = document.getElementById(regionId);
        if (!fresh || !region) return window.location.assign(url);
        region.replaceWith(document.importNode(fresh, true));
        localiseTimes(document.getElementById(regionId));
        window.history.replaceState(null, '', url);
        const summary = document.querySelector(`#${regionId} caption, #${regionId} .empty`);
        if (status && summary) status.textContent = summary.textContent.replace(/\s+/g, ' ').trim();
      } catch {
        // The page says what went wrong (a 400 for a value too long, a lost session).
        window.location.assign(url);
      }
    };
    form.addEventListener('input', () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(apply, 250);
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      window.clearTimeout(timer);
      apply();
    });
  }
};

document.addEventListener('DOMContentLoaded', () => {
  localiseTimes();
  localiseTimeFields();
  document.querySelector('[aria-invalid="true"]')?.focus();
  copyButtons();
  autoFilters();
  usageChart();
});
