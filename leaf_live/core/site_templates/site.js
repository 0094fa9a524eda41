// Tabs: one panel visible at a time, chosen by the URL fragment (#id) or the first tab; without JavaScript
// every panel shows. Marks <body data-tabs="ready"> once set up.
(function () {
  "use strict";
  function setup() {
    var buttons = Array.prototype.slice.call(document.querySelectorAll("[role=tab][data-tab]"));
    var panels = Array.prototype.slice.call(document.querySelectorAll("[role=tabpanel]"));
    if (buttons.length > 0) {
      var show = function (id) {
        var found = panels.some(function (p) { return p.id === id; });
        if (!found) { id = buttons[0].getAttribute("data-tab"); }
        panels.forEach(function (p) { p.hidden = p.id !== id; });
        buttons.forEach(function (b) {
          var on = b.getAttribute("data-tab") === id;
          b.setAttribute("aria-selected", on ? "true" : "false");
          b.tabIndex = on ? 0 : -1;
        });
        document.body.setAttribute("data-active-tab", id);
      };
      buttons.forEach(function (b) {
        b.addEventListener("click", function () {
          var id = b.getAttribute("data-tab");
          if (history.replaceState) { history.replaceState(null, "", "#" + id); }
          show(id);
        });
      });
      window.addEventListener("hashchange", function () { show(location.hash.slice(1)); });
      show(location.hash.slice(1));
    }
    document.body.setAttribute("data-tabs", "ready");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
