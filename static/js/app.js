// Small page helpers shared by every page. htmx does the requests; this only adds feedback.
// gettext: the page's language, from Django's JavaScript catalogue (base.html loads /jsi18n/ first).
const gettext = window.gettext || ((text) => text);
document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  if (!target) return;
  const note = document.createElement("p");
  note.className = "error";
  note.setAttribute("role", "alert");
  note.textContent = event.detail.xhr.responseText.slice(0, 300) || gettext("The server could not complete that request.");
  target.insertAdjacentElement("afterend", note);
});
document.addEventListener("htmx:sendError", (event) => {
  const target = event.detail.target;
  if (!target) return;
  const note = document.createElement("p");
  note.className = "error";
  note.setAttribute("role", "alert");
  note.textContent = gettext("Could not reach the server. Check your connection and try again.");
  target.insertAdjacentElement("afterend", note);
});

// Behaviour that used to sit in inline attributes, which the Content-Security-Policy forbids.
// <form data-no-submit>: answers are saved as they are clicked; Enter must not submit the form.
document.addEventListener("submit", (event) => {
  if (event.target.matches("form[data-no-submit]")) event.preventDefault();
});
document.addEventListener("change", (event) => {
  const el = event.target;
  // <select data-sets-form-action>: the chosen option's value is where the form posts.
  if (el.matches("select[data-sets-form-action]")) el.form.action = el.value;
  // <select data-autosubmit>: choosing submits the form.
  if (el.matches("[data-autosubmit]") && el.form) el.form.requestSubmit();
});

// A box that scrolls (a wide table, a long dialogue, a report section on a phone) scrolls from the keyboard too
// (WCAG 2.1.1): when nothing inside it can take the focus, the box itself becomes a tab stop, named after its first
// heading or caption. Checked again when the window changes size (a box may scroll on a phone and not on a desk).
(function () {
  const BOXES = ".card, .table-scroll, .chat-pane, figure.plot, .side, .turns, pre";
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  function scrolls(box) {
    const style = getComputedStyle(box);
    return (/(auto|scroll)/.test(style.overflowX) && box.scrollWidth > box.clientWidth + 1) ||
      (/(auto|scroll)/.test(style.overflowY) && box.scrollHeight > box.clientHeight + 1);
  }
  function update() {
    document.querySelectorAll(BOXES).forEach((box) => {
      const ours = box.dataset.scrollStop === "1";
      if (box.hasAttribute("tabindex") && !ours) return; // the template made its own choice
      if (scrolls(box) && (ours || !box.querySelector(FOCUSABLE))) {
        if (ours) return;
        box.tabIndex = 0;
        box.dataset.scrollStop = "1";
        const title = box.querySelector("h1, h2, h3, h4, caption, figcaption");
        if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby") && title) {
          box.setAttribute("aria-label", title.textContent.trim().slice(0, 120));
          if (!box.hasAttribute("role") && !/^(SECTION|FIGURE)$/.test(box.tagName)) box.setAttribute("role", "region");
        }
      } else if (ours) {
        box.removeAttribute("tabindex");
        delete box.dataset.scrollStop;
      }
    });
  }
  let timer = null;
  const later = () => { clearTimeout(timer); timer = setTimeout(update, 150); };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", update); else update();
  window.addEventListener("resize", later);
  window.addEventListener("load", update);
  document.addEventListener("htmx:afterSettle", later);
})();

// A sticky bar at the bottom (the rating and compare pages' actions): what focus, a tap or a script scrolls into
// view stops above it, however many rows the bar takes on this screen (WCAG 2.4.11, focus not obscured).
// The padding is set at once and again as soon as a script changes the bar's text (rating.js writes "Submit (24
// left)", which can take the bar to two rows), not only when the ResizeObserver next reports, at the next frame: a
// tap or a script before that frame would otherwise stop under the bar's second row.
(function () {
  const bar = document.querySelector(".actions");
  if (!bar) return;
  const root = document.documentElement;
  const fit = () => {
    const sticky = getComputedStyle(bar).position === "sticky";
    root.style.scrollPaddingBottom = sticky ? `${Math.ceil(bar.getBoundingClientRect().height) + 12}px` : "0px";
  };
  fit();
  new MutationObserver(fit).observe(bar, { childList: true, subtree: true, characterData: true });
  if (window.ResizeObserver) new ResizeObserver(fit).observe(bar);
})();

// Answers drawn as labels over a hidden radio (rating, compare, Delphi pages): when the keyboard moves the focus to
// such a radio, the browser scrolls only the 1 px radio into view; scroll its label in too, clear of a sticky bar.
document.addEventListener("focusin", (event) => {
  const radio = event.target;
  if (!radio.matches || !radio.matches("input[type=radio]") || !radio.labels || !radio.labels.length) return;
  if (radio.getBoundingClientRect().width > 2) return; // a radio drawn as itself
  radio.labels[0].scrollIntoView({ block: "nearest", inline: "nearest" });
});

// The account menu (<details class="account"> in the top bar) closes on Escape, giving the focus back to its
// summary, and on a click elsewhere, as menus do.
document.addEventListener("keydown", function (event) {
  if (event.key !== "Escape") return;
  document.querySelectorAll("details.account[open]").forEach(function (menu) {
    menu.open = false;
    menu.querySelector("summary").focus();
  });
});
document.addEventListener("click", function (event) {
  document.querySelectorAll("details.account[open]").forEach(function (menu) {
    if (!menu.contains(event.target)) menu.open = false;
  });
});

// A file whose page waited for it to be prepared (templates/scoring/partials/download_state.html): once it is
// ready, fetched by going to it. It is an attachment, so the page stays, saying the file is ready.
document.addEventListener("htmx:afterSettle", () => {
  document.querySelectorAll("[data-download-now]").forEach((element) => {
    const url = element.getAttribute("data-download-now");
    element.removeAttribute("data-download-now");
    window.location.assign(url);
  });
});
