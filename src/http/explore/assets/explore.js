// The explorer's few lines of script: a filter change submits the form (empty controls left out,
// so the URL holds only what was chosen), copy buttons, and the wait for raw-data charts.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("filters");
  if (form) {
    form.addEventListener("submit", () => {
      for (const el of form.elements) {
        if (el.name && el.value === "" && !(el.multiple && el.selectedOptions.length > 1)) el.disabled = true;
      }
    });
    form.addEventListener("change", () => form.requestSubmit());
  }
  for (const button of document.querySelectorAll("button.copy")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const text = document.getElementById(button.dataset.copy).textContent;
      try { await navigator.clipboard.writeText(text); button.textContent = "Copied"; }
      catch { button.textContent = "Select and copy"; }
    });
  }
  for (const figure of document.querySelectorAll("figure.raw")) {
    const img = figure.querySelector("img"), wait = figure.querySelector(".wait");
    const done = () => { wait.textContent = img.naturalWidth ? "" : " — not available for this run"; };
    if (img.complete) done(); else { img.addEventListener("load", done); img.addEventListener("error", done); }
  }
});
