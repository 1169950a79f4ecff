/* switchboard dashboard, run before uPlot loads. uPlot formats its numbers with Intl in the browser's language
   (navigator.language), once, as it loads: a language Intl refuses stops it loading, and every chart with it. A POSIX
   locale gives a browser "en-US@posix", which ICU takes and Intl does not. Such a language is read here as its part
   that Intl takes ("en-US"), or else as "en-US"; a language Intl takes is left alone. */
(function () {
  'use strict'
  function takes(tag) {
    try {
      new Intl.NumberFormat(tag)
      return true
    } catch (e) {
      return false
    }
  }
  var language = navigator.language
  if (takes(language)) return
  // "en_US.UTF-8@posix" → "en-US".
  var base = String(language || '').split(/[@.]/)[0].replace(/_/g, '-')
  var usable = base && takes(base) ? base : 'en-US'
  try {
    Object.defineProperty(navigator, 'language', { value: usable, configurable: true })
  } catch (e) {
    // A browser that will not have it: the charts say they could not be drawn (app.js), their tables stay.
  }
})()
