// Delphi pages: keyboard shortcuts on the questionnaire and readable save states for htmx saves.
(function () {
  // Refusals (round closed, bad input) come back as 4xx with a message: show it where "Saved" would appear.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
      const target = event.detail.target;
      if (target) target.classList.add("error");
    }
  });
  document.addEventListener("htmx:beforeRequest", (event) => {
    const target = event.detail.target;
    if (target && target.matches(".save-state, .save-note")) {
      target.classList.remove("error");
      target.textContent = "Saving…";
    }
  });
  document.addEventListener("htmx:sendError", (event) => {
    const target = event.detail.target;
    if (target) { target.classList.add("error"); target.textContent = "Not saved: the server cannot be reached. Change the answer again to retry."; }
  });
  document.addEventListener("htmx:afterRequest", () => {
    const counter = document.querySelector("[data-answered]");
    if (counter) counter.textContent = document.querySelectorAll("form.q-item input[name=importance]:checked").length;
  });

  // Typing in a comment saves after a pause: the form's hx-trigger listens for "typed" (an htmx trigger filter
  // would need eval, which the Content-Security-Policy forbids).
  document.addEventListener("input", (event) => {
    const form = event.target.tagName === "TEXTAREA" && event.target.closest("form.q-item");
    if (form) form.dispatchEvent(new CustomEvent("typed"));
  });
  // Distribution bars: widths set here, as style attributes are not allowed by the Content-Security-Policy.
  function sizeBars(root) {
    root.querySelectorAll(".bar[data-pct]").forEach((bar) => { bar.style.width = `${bar.dataset.pct}%`; });
  }
  sizeBars(document);
  document.addEventListener("htmx:afterSwap", (event) => sizeBars(event.detail.target));

  function items() { return Array.from(document.querySelectorAll("form.q-item")); }
  let active = null;
  function activate(el, scroll) {
    if (!el) return;
    if (active) active.classList.remove("active");
    active = el;
    el.classList.add("active");
    if (scroll) { el.focus({ preventScroll: true }); el.scrollIntoView({ block: "center" }); }
  }
  document.addEventListener("focusin", (event) => {
    const form = event.target.closest && event.target.closest("form.q-item");
    if (form) activate(form, false);
  });
  document.addEventListener("keydown", (event) => {
    if (!document.querySelector("[data-questionnaire]")) return;
    // Keys typed into a field (an on-screen keyboard types there) or composed by an input method are not shortcuts.
    if (event.isComposing || event.keyCode === 229) return;
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "textarea" || (tag === "input" && !["radio", "checkbox"].includes(event.target.type)) || tag === "select") return;
    if (event.target.isContentEditable) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const list = items();
    if (!list.length) return;
    const index = active ? list.indexOf(active) : -1;
    if (["j", "ArrowDown"].includes(event.key)) {
      event.preventDefault(); activate(list[Math.min(list.length - 1, index + 1)], true);
    } else if (["k", "ArrowUp"].includes(event.key)) {
      event.preventDefault(); activate(list[Math.max(0, index - 1)], true);
    } else if (/^[1-5]$/.test(event.key)) {
      const form = active || list[0];
      if (form.hasAttribute("inert")) return;
      const radio = form.querySelector(`input[name=importance][value="${event.key}"]`);
      if (!radio) return;
      event.preventDefault();
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
      if (!active) activate(form, false);
    } else if (event.key === "c" && active) {
      const details = active.querySelector("details");
      if (details) { event.preventDefault(); details.open = true; details.querySelector("textarea").focus(); }
    }
  });
})();
