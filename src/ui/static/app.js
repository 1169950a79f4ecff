/* switchboard dashboard: confirmation prompts and charts. No inline script anywhere (CSP script-src 'self'). */
(function () {
  'use strict'

  // Forms that change a lot (replay all, run now, remove) ask first: <form data-confirm="…">.
  document.addEventListener('submit', function (event) {
    var form = event.target
    var message = form && form.getAttribute && form.getAttribute('data-confirm')
    if (message && !window.confirm(message)) event.preventDefault()
  }, true)

  var COLORS = ['#0172ad', '#d93526', '#2f9e44', '#e8590c', '#7048e8', '#0c8599', '#c2255c', '#5c940d', '#868e96']

  // <div data-chart='{"x":[unix seconds…],"series":[{"label":"…","values":[…]}],"time":true,"days":false}'>
  // Said in the chart's place when it cannot be drawn; its figures are in the table under every chart.
  function unavailable(el) {
    el.textContent = 'This chart could not be drawn in this browser; its figures are in the table below.'
    el.setAttribute('data-drawn', 'failed')
  }

  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

  // Times are read in UTC, as every time on the dashboard is written (a browser east of UTC+12 would otherwise show a
  // day's point on the next day), on the 24-hour clock.
  function dayLabel(v) {
    var d = new Date(v * 1000)
    return MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate()
  }

  function pad(n) { return n < 10 ? '0' + n : String(n) }

  function clockLabel(v) {
    var d = new Date(v * 1000)
    return pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes())
  }

  // An hour's tick; midnight shows the date instead.
  function hourLabel(v) {
    return clockLabel(v) === '00:00' ? dayLabel(v) : clockLabel(v)
  }

  // An x axis whose ticks read `format`; the labels drawn are also kept in data-x-labels.
  function xAxis(el, format, splits) {
    var axis = {
      stroke: 'currentColor',
      values: function (u, values) {
        var labels = values.map(format)
        el.setAttribute('data-x-labels', labels.join(', '))
        return labels
      },
    }
    if (splits) axis.splits = function () { return splits }
    return axis
  }

  // A series of days (x = noon UTC of each date): a tick a day, every few days on a long series, ending on the last.
  function dayAxis(el, xs) {
    var every = Math.max(1, Math.ceil(xs.length / 8))
    return xAxis(el, dayLabel, xs.filter(function (_, i) { return (xs.length - 1 - i) % every === 0 }))
  }

  function draw(el) {
    if (el.getAttribute('data-drawn')) return
    // uPlot did not load (blocked, or failed in a browser whose language Intl refuses that locale-guard.js could not mend).
    if (typeof window.uPlot !== 'function') return unavailable(el)
    var spec
    try { spec = JSON.parse(el.getAttribute('data-chart')) } catch (e) { return }
    var width = Math.max(240, el.clientWidth || 320)
    var opts = {
      width: width,
      height: spec.height || 220,
      scales: { x: { time: spec.time !== false } },
      // Times in UTC, as every other time on the dashboard (and the figures' table under the chart) is.
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') },
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      axes: [spec.days ? dayAxis(el, spec.x) : spec.time !== false ? xAxis(el, hourLabel) : { stroke: 'currentColor' }, { stroke: 'currentColor' }],
      // The legend's x under the cursor: the date too, for a series of days.
      series: [spec.days
        ? { label: 'Day', value: function (u, v) { return v == null ? '--' : dayLabel(v) } }
        : { label: 'Time (UTC)', value: function (u, v) { return v == null ? '--' : dayLabel(v) + ' ' + clockLabel(v) } }].concat(spec.series.map(function (s, i) {
        return { label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: spec.x.length < 40 } }
      })),
    }
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values }))
    el.textContent = ''
    var plot
    try {
      plot = new window.uPlot(opts, data, el)
    } catch (e) {
      // One chart that cannot draw must not stop the others.
      return unavailable(el)
    }
    el.setAttribute('data-drawn', '1')
    drawn.push({ el: el, plot: plot, height: opts.height })
  }

  // The charts on the page, resized by one listener. A chart swapped out (the overview refreshes itself every 15 s)
  // is let go: a listener per chart drawn kept every old plot alive — a tab left open grew by megabytes an hour.
  var drawn = []
  function forgetDetached() {
    drawn = drawn.filter(function (c) {
      if (c.el.isConnected) return true
      c.plot.destroy()
      return false
    })
  }
  window.addEventListener('resize', function () {
    forgetDetached()
    drawn.forEach(function (c) { c.plot.setSize({ width: Math.max(240, c.el.clientWidth || 320), height: c.height }) })
  })

  function drawAll(root) {
    forgetDetached()
    var nodes = (root || document).querySelectorAll('[data-chart]')
    for (var i = 0; i < nodes.length; i++) draw(nodes[i])
  }

  document.addEventListener('DOMContentLoaded', function () { drawAll(document) })
  // htmx swaps in fresh fragments (the overview refreshes itself): draw their charts too.
  document.addEventListener('htmx:load', function (event) { drawAll(event.detail && event.detail.elt ? event.detail.elt : document) })
})()
