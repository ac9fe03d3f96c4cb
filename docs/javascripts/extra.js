// The manual's wide tables scroll sideways inside their box on a narrow screen: the box then takes the keyboard
// focus, so that the arrow keys scroll it (WCAG 2.1.1), and is named after the table's header row.
(function () {
  "use strict";
  function update() {
    document.querySelectorAll(".md-typeset__scrollwrap").forEach((box) => {
      if (box.scrollWidth > box.clientWidth + 1) {
        const head = box.querySelector("thead tr, tr");
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        const cells = head ? Array.from(head.cells).map((cell) => cell.textContent.trim()).join(", ") : "";
        box.setAttribute("aria-label", "Table" + (cells ? ": " + cells : ""));
      } else {
        box.removeAttribute("tabindex");
      }
    });
  }
  // the theme wraps the tables once the page is set up (its document$ stream); look after that, and on resizes
  if (window.document$) window.document$.subscribe(() => setTimeout(update, 0)); else update();
  window.addEventListener("load", update);
  window.addEventListener("resize", update);
})();
