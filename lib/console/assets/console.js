/* global document, navigator, window */
// The settings console's behaviour, served as a file so the Content-Security-Policy needs no
// inline script: the copy button of a new key, and the usage chart (Chart.js, from its package).
'use strict';

document.addEventListener('DOMContentLoaded', function () {
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

  var canvas = document.getElementById('usage-chart');
  var data = document.getElementById('usage-chart-data');
  if (!canvas || !data || !window.Chart) return;
  var chart = JSON.parse(data.textContent);
  var colours = { '2xx': '#2e7d32', '3xx': '#1565c0', '4xx': '#ef6c00', '5xx': '#c62828' };
  var label = function (start) {
    return chart.bucket === 'hour' ? start.slice(5, 13).replace('T', ' ') + ':00' : start.slice(0, 10);
  };
  new window.Chart(canvas, {
    type: 'bar',
    data: {
      labels: chart.starts.map(label),
      datasets: Object.keys(colours).map(function (cls) {
        return { label: cls, data: chart.counts[cls], backgroundColor: colours[cls] };
      }),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { stacked: true, title: { display: true, text: chart.bucket === 'hour' ? 'Hour (UTC)' : 'Day (UTC)' } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: 'Calls' }, ticks: { precision: 0 } },
      },
    },
  });
});
