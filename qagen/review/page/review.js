// The qagen review page: one item at a time, labelled with the keyboard, saved at once.
// Every text shown comes from the corpus or a model and is untrusted: it is only ever set as
// textContent (never as HTML), so nothing in it can run or change the page.
"use strict";

// The run's critics ({name, help}, in the registry's order) come with the session: GET /api/state.
const critics = () => view.session.critics;
const REVIEWER_KEY = "qagen-review-reviewer";

const view = {
  session: null, // GET /api/state
  reviewer: null,
  index: 0,
  item: null, // the item as the server sent it (verdicts only once labelled)
  saved: null, // this reviewer's saved label of the item, or null
  form: null, // the label being given: {criteria: {name: {pass, score}}, keep, correct, note}
  dirty: false,
  selected: 0, // the criterion Shift+digit scores
  busy: false,
};

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

function query() {
  return `?reviewer=${encodeURIComponent(view.reviewer)}`;
}

// --- loading ---------------------------------------------------------------------------------
async function start() {
  view.reviewer = sessionStorage.getItem(REVIEWER_KEY);
  const initial = await api(`/api/state${view.reviewer ? query() : ""}`);
  view.reviewer = initial.reviewer;
  await resume(initial);
}

async function resume(state) {
  view.session = state;
  $("directory").textContent = state.directory;
  $("reviewer").textContent = state.reviewer;
  document.body.dataset.kind = state.kind;
  // An answer's contexts run long: its judge's verdicts go above them, where they are seen.
  if (state.kind === "answer") $("answer-evidence").before($("verdicts-block"));
  if (state.total === 0) {
    showDone("There is nothing to review.");
    return;
  }
  $("review").hidden = false;
  await show(state.position === null ? state.total - 1 : state.position);
  if (state.position === null) showDone(`All ${state.total} items are labelled by ${state.reviewer}.`);
}

async function show(index) {
  if (index < 0 || index >= view.session.total) return;
  const answer = await api(`/api/items/${index}${query()}`);
  view.index = answer.index;
  view.item = answer.item;
  view.saved = answer.label;
  view.form = formOf(answer.label);
  view.dirty = false;
  render();
}

function formOf(label) {
  if (!label) return { criteria: {}, keep: null, correct: null, note: "" };
  return {
    criteria: JSON.parse(JSON.stringify(label.criteria)),
    keep: label.keep,
    correct: label.correct,
    note: label.note,
  };
}

// --- rendering -------------------------------------------------------------------------------
function render() {
  const item = view.item;
  const session = view.session;
  $("review").dataset.index = String(view.index + 1);
  $("review").dataset.itemId = item.id;
  $("position").textContent = `item ${view.index + 1} of ${session.total}`;
  $("progress-text").textContent = `${session.labelled} of ${session.total} labelled`;
  $("progress-fill").style.width = `${(100 * session.labelled) / Math.max(session.total, 1)}%`;
  $("saved-badge").hidden = !view.saved;
  $("question").textContent = item.question;
  const drafts = item.kind === "draft";
  $("draft-evidence").hidden = !drafts;
  $("answer-evidence").hidden = drafts;
  $("criteria-block").hidden = !drafts;
  $("correct-block").hidden = drafts;
  $("reference-block").hidden = drafts;
  $("answer-title").textContent = drafts ? "Answer" : "System's answer";
  $("answer").textContent = item.answer ?? `(no answer: ${item.answer_error})`;
  if (drafts) renderDraft(item);
  else renderAnswer(item);
  renderForm();
  renderVerdicts();
  $("message").textContent = "";
}

function renderDraft(item) {
  const type = item.question_type && item.question_type !== "factoid" ? ` · ${item.question_type} question` : "";
  $("source").textContent = (item.source ? `· ${item.source}` : "") + type;
  // A question drafted from several passages: the others after the first, each with its document.
  const more = $("more-passages");
  more.replaceChildren();
  item.passages.forEach((passage, index) => {
    more.append(el("h2", { text: `Passage ${index + 2} ` }, el("span", { class: "muted", text: `· ${passage.source}` })));
    more.append(el("div", { class: "text", text: passage.text }));
  });
  $("match").textContent = {
    evidence: "The sentence the generator quoted as its evidence is highlighted.",
    evidence_missing: "The sentence the generator quoted as its evidence is not in the chunk (the answer is highlighted where it occurs).",
    exact: "The answer is highlighted where it occurs.",
    loose: "The answer occurs with other case or spacing (highlighted).",
    none: "The answer does not occur word for word in the chunk.",
  }[item.match];
  highlighted($("chunk"), item.chunk, item.spans);
  const first = $("chunk").querySelector("mark");
  if (first) first.scrollIntoView({ block: "center" });
}

function renderAnswer(item) {
  $("reference").textContent = item.reference;
  const list = $("contexts");
  list.replaceChildren();
  for (const context of item.contexts) {
    const text = el("div", { class: "text" });
    highlighted(text, context.text, context.spans);
    list.append(el("li", {}, el("div", { class: "muted", text: context.source || "" }), text));
  }
  if (!item.contexts.length) list.append(el("li", { class: "muted", text: "The system reported no context." }));
}

// `text` into `target`, the spans marked: text nodes only, so nothing in it is read as HTML.
function highlighted(target, text, spans) {
  target.replaceChildren();
  let at = 0;
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    if (span.start < at) continue;
    target.append(document.createTextNode(text.slice(at, span.start)));
    target.append(el("mark", { text: text.slice(span.start, span.end) }));
    at = span.end;
  }
  target.append(document.createTextNode(text.slice(at)));
}

function renderForm() {
  const table = $("criteria");
  table.replaceChildren();
  critics().forEach(({ name, help }, position) => {
    const given = view.form.criteria[name];
    const row = el("tr", { class: position === view.selected ? "selected" : "", "data-criterion": name });
    row.append(el("th", {}, el("kbd", { text: String(position + 1) }), ` ${name}`, el("div", { class: "muted", text: help })));
    for (const [value, word] of [[true, "pass"], [false, "fail"]]) {
      const button = el("button", { type: "button", class: `choice ${word}`, text: word });
      if (given && given.pass === value) button.classList.add("on");
      button.addEventListener("click", () => setPass(name, value));
      row.append(el("td", {}, button));
    }
    const scores = el("td", { class: "scores" });
    for (let score = 1; score <= 5; score++) {
      const button = el("button", { type: "button", class: "score", text: String(score), title: `score ${score}` });
      if (given && given.score === score) button.classList.add("on");
      button.addEventListener("click", () => setScore(name, score));
      scores.append(button);
    }
    row.append(scores);
    table.append(row);
  });
  toggleOn($("keep"), view.form.keep === true);
  toggleOn($("reject"), view.form.keep === false);
  toggleOn($("correct"), view.form.correct === true);
  toggleOn($("incorrect"), view.form.correct === false);
  if (document.activeElement !== $("note")) $("note").value = view.form.note;
}

function toggleOn(button, on) {
  button.classList.toggle("on", on);
  button.setAttribute("aria-pressed", String(on));
}

function renderVerdicts() {
  const verdicts = view.item.verdicts;
  const table = $("verdicts");
  table.replaceChildren(); // the previous item's verdicts leave the page, not just the view
  $("verdicts-block").hidden = !verdicts;
  if (!verdicts) return;
  $("verdicts-title").textContent = view.item.kind === "draft" ? "What the critics said" : "What the judge said";
  table.append(el("tr", {}, el("th", { text: "" }), el("th", { text: "score" }), el("th", { text: "you" }), el("th", { text: "rationale" })));
  for (const verdict of verdicts) {
    const mine = yourVerdict(verdict.name);
    const score = verdict.score === null ? verdict.failure : `${verdict.score} ${verdict.passes ? "pass" : "fail"}`;
    const agree = mine === null || verdict.passes === null ? "" : mine === verdict.passes ? "agree" : "disagree";
    table.append(
      el("tr", { class: agree, "data-verdict": verdict.name },
        el("th", { text: verdict.name }),
        el("td", { class: "verdict-score", text: score, title: verdict.threshold ? `passes at ${verdict.threshold}` : "" }),
        el("td", { text: mine === null ? "–" : mine ? "pass" : "fail" }),
        el("td", { class: "rationale", text: verdict.rationale || "" })));
  }
}

function yourVerdict(name) {
  if (view.item.kind === "answer") return view.saved ? view.saved.correct : null;
  const given = view.saved && view.saved.criteria[name];
  return given ? given.pass : null;
}

// --- labelling -------------------------------------------------------------------------------
function changed() {
  view.dirty = true;
  renderForm();
  $("message").textContent = view.saved ? "changed: Enter saves the new label" : "";
}

function setPass(name, value) {
  view.form.criteria[name] = { pass: value, score: null };
  view.selected = critics().findIndex((critic) => critic.name === name);
  changed();
}

function togglePass(position) {
  const { name } = critics()[position];
  const given = view.form.criteria[name];
  setPass(name, given ? !given.pass : true);
}

// A score decides pass or fail at the run's threshold for the criterion, as the critics' do.
function setScore(name, score) {
  const threshold = view.session.thresholds[name];
  view.form.criteria[name] = { pass: score >= threshold, score };
  view.selected = critics().findIndex((critic) => critic.name === name);
  changed();
}

function clearCriterion() {
  delete view.form.criteria[critics()[view.selected].name];
  changed();
}

function setDecision(field, value) {
  view.form[field] = view.form[field] === value ? null : value;
  changed();
}

async function saveOrNext() {
  if (view.busy) return;
  if (view.saved && !view.dirty) {
    await next();
    return;
  }
  view.form.note = $("note").value;
  view.busy = true;
  try {
    const answer = await api("/api/labels", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ index: view.index, item_id: view.item.id, reviewer: view.reviewer, ...view.form }),
    });
    view.item = answer.item;
    view.saved = answer.label;
    view.session = answer.state;
    view.dirty = false;
    render();
    $("message").textContent = "saved · Enter: next item";
  } catch (error) {
    $("message").textContent = error.message;
  } finally {
    view.busy = false;
  }
}

async function next() {
  if (view.index + 1 < view.session.total) await show(view.index + 1);
  else if (view.session.position !== null) await show(view.session.position);
  else showDone(`All ${view.session.total} items are labelled by ${view.reviewer}.`);
}

function showDone(text) {
  $("done").textContent = text;
  $("done").hidden = false;
}

async function changeReviewer(name) {
  sessionStorage.setItem(REVIEWER_KEY, name);
  view.reviewer = name;
  $("reviewer-form").hidden = true;
  $("done").hidden = true;
  await resume(await api(`/api/state${query()}`));
}

// --- keys ------------------------------------------------------------------------------------
function onKey(event) {
  const typing = event.target instanceof HTMLTextAreaElement || event.target instanceof HTMLInputElement;
  if (typing) {
    if (event.key === "Escape") event.target.blur();
    else if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target === $("note")) {
      event.preventDefault();
      event.target.blur();
      saveOrNext();
    }
    return;
  }
  if (event.altKey || event.ctrlKey || event.metaKey || !view.item) return;
  const drafts = view.item.kind === "draft";
  const digit = /^Digit([0-9])$/.exec(event.code);
  let handled = true;
  const count = drafts ? critics().length : 0;
  const position = Number(event.key) - 1; // a critic's key: 1 to 9, in the order shown
  if (drafts && digit && event.shiftKey && digit[1] >= "1" && digit[1] <= "5") setScore(critics()[view.selected].name, Number(digit[1]));
  else if (drafts && !event.shiftKey && /^[1-9]$/.test(event.key) && position < count) togglePass(position);
  else if (drafts && event.key === "0") clearCriterion();
  else if (drafts && event.key === "ArrowUp") { view.selected = (view.selected + count - 1) % count; renderForm(); }
  else if (drafts && event.key === "ArrowDown") { view.selected = (view.selected + 1) % count; renderForm(); }
  else if (drafts && event.key === "k") setDecision("keep", true);
  else if (drafts && event.key === "r") setDecision("keep", false);
  else if (!drafts && event.key === "c") setDecision("correct", true);
  else if (!drafts && event.key === "x") setDecision("correct", false);
  else if (event.key === "n") $("note").focus();
  else if (event.key === "Enter") saveOrNext();
  else if (event.key === "ArrowRight") show(view.index + 1);
  else if (event.key === "ArrowLeft") show(view.index - 1);
  else if (event.key === "u" && view.session.position !== null) show(view.session.position);
  else handled = false;
  if (handled) event.preventDefault();
}

document.addEventListener("DOMContentLoaded", () => {
  document.addEventListener("keydown", onKey);
  $("note").addEventListener("input", () => { view.form.note = $("note").value; view.dirty = true; });
  $("keep").addEventListener("click", () => setDecision("keep", true));
  $("reject").addEventListener("click", () => setDecision("keep", false));
  $("correct").addEventListener("click", () => setDecision("correct", true));
  $("incorrect").addEventListener("click", () => setDecision("correct", false));
  $("save").addEventListener("click", saveOrNext);
  $("prev").addEventListener("click", () => show(view.index - 1));
  $("next").addEventListener("click", () => show(view.index + 1));
  $("change-reviewer").addEventListener("click", () => {
    $("reviewer-form").hidden = false;
    $("reviewer-input").value = view.reviewer;
    $("reviewer-input").focus();
  });
  $("reviewer-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("reviewer-input").value.trim();
    if (name) changeReviewer(name).catch(fatal);
  });
  start().catch(fatal);
});

function fatal(error) {
  $("fatal").textContent = `The review page could not load: ${error.message}`;
  $("fatal").hidden = false;
}
