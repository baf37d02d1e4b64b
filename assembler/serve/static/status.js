// The status page of `assemble serve`: reads /api/<page>, draws it, and draws it again when
// /api/events says something changed. Workspace text only ever goes in as textContent; the one
// exception is the file's HTML, which the server rendered from Markdown with raw HTML off.
"use strict";

(function () {
  const page = document.body.dataset.page;
  const palette = ["#c0392b", "#2471a3", "#1e8449", "#7d3c98", "#b9770e", "#117a65"];
  let chart = null;
  let moodPoints = {};
  let zone = undefined;
  let until = null; // the end of the Mood page's window, when not now

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function fill(node, ...children) {
    clear(node);
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function $(id) {
    return document.getElementById(id);
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  async function getJSON(path) {
    const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    const data = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  function clock(iso) {
    if (!iso) return "–";
    const options = { hour: "2-digit", minute: "2-digit", hour12: false };
    if (zone) options.timeZone = zone;
    return new Intl.DateTimeFormat([], options).format(new Date(iso));
  }

  function day(iso) {
    if (!iso) return "–";
    const options = { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hour12: false };
    if (zone) options.timeZone = zone;
    return new Intl.DateTimeFormat([], options).format(new Date(iso));
  }

  function card(label, value, extra) {
    return el("div", { class: "card" + (extra ? " " + extra : "") }, el("span", { class: "label" }, label), el("strong", {}, value));
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "n/a" : Number(value).toFixed(digits);
  }

  // --- Now ---------------------------------------------------------------------------------

  function drawNow(data) {
    const cards = clear($("now-cards"));
    const file = data.file || {};
    if (file.error) {
      cards.append(card("SCRATCHPAD.md", "missing or unreadable", "bad"));
      clear($("now-file")).append(el("p", { class: "error" }, file.error));
    } else {
      cards.append(
        card("SCRATCHPAD.md", file.fresh ? "fresh" : "stale", file.fresh ? "good" : "bad"),
        card(file.fresh ? "time left" : "expired", file.fresh ? file.left : file.expired_ago + " ago"),
        card("written", day(file.updated)),
        card("tokens", file.tokens ? `${file.tokens.total} / ${file.tokens.caps.total}` : "n/a"),
        card("messages read", file.messages_read ?? "n/a"),
      );
      // Rendered on the server by markdown-it with raw HTML and images off.
      $("now-file").innerHTML = file.html;
    }
    cards.append(card("daemon", data.daemon.running ? `running (pid ${data.daemon.pid || "?"})` : "not running", data.daemon.running ? "good" : ""));
    const runs = clear($("now-runs"));
    if (!data.runs.length) {
      runs.append(el("p", { class: "note" }, "No assembly logged yet: the daemon and assemble --once log each of their runs."));
    } else {
      const stages = (run) => Object.entries(run.stages_ms || {}).map(([name, ms]) => `${name} ${Math.round(ms)}`).join(", ");
      const rows = data.runs.map((run) =>
        el("tr", {}, el("td", {}, day(run.at)), el("td", {}, run.reason), el("td", { class: "num" }, `${Math.round(run.ms)} ms`),
          el("td", { class: "stages" }, stages(run)),
          el("td", { class: "num" }, run.messages_read ?? ""), el("td", {}, run.written ? "written" : "not written")));
      runs.append(el("table", {}, el("thead", {}, el("tr", {}, ["when", "why", "took", "stages (ms)", "messages", "file"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)));
    }
    const problems = clear($("now-problems"));
    const degraded = (file.degraded || []).map((p) => el("li", {}, `${p.what}: ${p.why}`));
    const dropped = (file.dropped || []).map((d) => el("li", { class: "muted" }, `dropped by the caps: ${d}`));
    fill(problems, degraded.length || dropped.length ? el("ul", {}, degraded, dropped) : el("p", { class: "note" }, "None."));
  }

  // --- Mood --------------------------------------------------------------------------------

  function moodDatasets(data) {
    const sets = [];
    moodPoints = {};
    data.speakers.forEach((speaker, index) => {
      const color = palette[index % palette.length];
      for (const point of speaker.points) moodPoints[point.id] = Object.assign({ speaker: speaker.name }, point);
      const base = { speaker: speaker.name, showLine: true, borderColor: color, backgroundColor: color, tension: 0.25 };
      sets.push(Object.assign({}, base, {
        label: `${speaker.name}: valence`, kind: "valence", pointRadius: speaker.points.map((p) => (p.moved ? 6 : 3.5)),
        data: speaker.points.map((p) => ({ x: p.t, y: p.valence, id: p.id })),
      }));
      sets.push(Object.assign({}, base, {
        label: `${speaker.name}: arousal`, kind: "arousal", borderDash: [6, 4], pointStyle: "rectRot", pointRadius: 3,
        data: speaker.points.map((p) => ({ x: p.t, y: p.arousal, id: p.id })),
      }));
    });
    return sets;
  }

  function showMessage(id) {
    const point = moodPoints[id];
    const box = clear($("mood-message"));
    if (!point) return;
    box.dataset.id = id;
    const labels = Object.entries(point.labels).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ") || "no clear emotion";
    box.append(
      el("p", { class: "meta" }, `${point.speaker} at ${day(point.at)} · ${point.primary} ${point.primary_score.toFixed(2)} · valence ${fixed(point.valence, 2)} · arousal ${fixed(point.arousal, 2)}`),
      el("p", { class: "meta" }, `labels: ${labels}`),
      el("blockquote", { id: "mood-text" }, point.text),
    );
  }

  function drawMood(data) {
    zone = data.timezone || undefined;
    const count = fill($("mood-count"), `${data.messages} human messages from ${day(data.start)} to ${day(data.end)}`);
    // A page of the newest points: the API pages through a span too large for one answer.
    if (data.next) count.append(` (the newest ${data.shown} shown)`);
    if (until) {
      const back = el("button", { type: "button" }, "back to now");
      back.addEventListener("click", () => { until = null; load(); });
      count.append(" ", back);
    } else if (!data.messages && data.latest) {
      // An old workspace (or the demo without --now): offer the day of its last message.
      const show = el("button", { type: "button", id: "mood-latest" }, `show the ${$("mood-hours").selectedOptions[0].text} up to it`);
      show.addEventListener("click", () => { until = data.latest; load(); });
      count.append(`; the latest was said on ${day(data.latest)} `, show);
    }
    const datasets = moodDatasets(data);
    if (chart === null) {
      chart = new Chart($("mood-chart"), {
        type: "scatter",
        data: { datasets },
        options: {
          animation: false,
          maintainAspectRatio: false,
          interaction: { mode: "nearest", intersect: true },
          scales: {
            x: { type: "linear", ticks: { callback: (value) => clock(new Date(value).toISOString()) } },
            y: { min: -1, max: 1, title: { display: true, text: "valence (line) · arousal (dashed)" } },
          },
          plugins: {
            tooltip: { callbacks: { label: (item) => {
              const point = moodPoints[item.raw.id];
              return `${item.dataset.label} ${item.raw.y.toFixed(2)} (${point.primary}) ${clock(point.at)}`;
            } } },
          },
          onClick: (event, elements) => {
            if (!elements.length) return;
            const hit = elements[0];
            showMessage(chart.data.datasets[hit.datasetIndex].data[hit.index].id);
          },
        },
      });
      window.statusChart = chart;
    } else {
      chart.data.datasets = datasets;
      chart.update("none");
    }
    const state = data.window.combined;
    fill($("mood-state"), 
      el("p", {}, el("strong", {}, `${state.primary} ${fixed(state.primary_score, 2)}`), state.secondary ? ` · then ${state.secondary}` : ""),
      el("p", {}, `valence ${fixed(state.valence, 2)} · arousal ${fixed(state.arousal, 2)} · confidence ${fixed(state.confidence, 2)} (${state.messages} messages)`),
      el("p", { class: "muted" }, state.trajectory),
      state.explain.length ? el("ul", { class: "muted" }, state.explain.map((line) => el("li", {}, line))) : null,
      Object.entries(data.window.speakers).map(([name, s]) => el("p", {}, `${name}: ${s.primary} ${fixed(s.primary_score, 2)}, ${s.trajectory}`)),
    );
    const strategy = data.strategy;
    fill($("mood-strategy"), 
      el("p", {}, el("strong", {}, strategy.rule), ` · ${strategy.style}, ${strategy.tone}, ${strategy.verbosity}`),
      strategy.note ? el("p", {}, strategy.note) : null,
      el("p", { class: "muted" }, strategy.reason),
    );
    const movers = clear($("mood-movers"));
    const moved = Object.values(moodPoints).filter((p) => p.moved).sort((a, b) => a.t - b.t);
    for (const point of moved) {
      const link = el("a", { href: "#", "data-id": point.id }, `${clock(point.at)} ${point.speaker}: ${point.primary}`);
      link.addEventListener("click", (event) => { event.preventDefault(); showMessage(point.id); });
      movers.append(el("li", {}, link, " ", el("span", { class: "muted" }, point.text.slice(0, 140))));
    }
    if (!moved.length) movers.append(el("li", { class: "muted" }, "none in this window"));
    const shown = $("mood-message").dataset.id;
    if (shown) showMessage(shown);
  }

  // --- Memory ------------------------------------------------------------------------------

  function drawMemory(data) {
    const source = data.source.kind === "assembly"
      ? `From the assembly of ${day(data.source.at)} (${data.source.reason}).`
      : "From the recent messages of the mood history; no assembly of the daemon logged yet.";
    fill($("memory-source"), 
      el("p", {}, data.enabled ? source : "Memory search is off in the configuration."),
      data.chunks !== null && data.chunks !== undefined ? el("p", { class: "muted" }, `${data.chunks} chunks in the index.`) : null,
    );
    const queries = clear($("memory-queries"));
    data.queries.forEach((q, i) => queries.append(el("li", {}, el("span", { class: "muted" }, i === 0 ? "current: " : ""), q)));
    if (!data.queries.length) queries.append(el("li", { class: "muted" }, "no human message with content to search for"));
    const body = clear($("memory-hits").querySelector("tbody"));
    for (const hit of data.hits) {
      body.append(el("tr", {},
        el("td", {}, `${hit.path}:${hit.start_line}-${hit.end_line}`), el("td", { class: "num" }, fixed(hit.score, 3)),
        el("td", { class: "num" }, fixed(hit.vector, 3)), el("td", { class: "num" }, fixed(hit.bm25, 3)),
        el("td", { class: "num" }, `×${fixed(hit.recency, 2)}`),
        el("td", { class: hit.in_file ? "" : "muted" }, hit.in_file ? "shown" : `dropped: over the auto part's cap (${data.caps.auto} tokens)`),
        el("td", {}, hit.snippet)));
    }
    if (!data.hits.length) body.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, (data.explain || []).join(" ") || "no hits")));
    const dropped = clear($("memory-dropped"));
    for (const item of data.dropped) dropped.append(el("li", {}, item));
    if (!data.dropped.length) dropped.append(el("li", { class: "muted" }, "nothing was dropped"));
  }

  // --- Sections ----------------------------------------------------------------------------

  function drawSections(data) {
    fill($("sections-total"), 
      card("agent part", `${data.agent_tokens} / ${data.agent_cap} tokens`, data.agent_tokens > data.agent_cap ? "bad" : ""),
      card("sections", data.sections.length),
    );
    const list = clear($("sections-list"));
    for (const section of data.sections) {
      const cap = section.cap;
      const share = cap ? Math.min(100, Math.round((100 * section.tokens) / cap)) : 0;
      const bar = el("div", { class: "bar", title: cap ? `${section.tokens} of ${cap} tokens` : "no cap of its own" }, el("span", { class: share >= 90 ? "full" : "" }));
      bar.firstChild.style.width = `${share}%`;
      const history = section.history.map((e) => el("li", {}, `${day(e.at)} ${e.action} by ${e.source || "?"} (${e.tokens} tokens)`));
      list.append(el("article", { class: "section", "data-name": section.name },
        el("h2", {}, section.name, el("span", { class: "muted" }, ` · ${section.kind}, by ${section.source}`)),
        el("p", {}, `${section.tokens} tokens${cap ? ` of ${cap}` : ""} · written ${section.age} ago` + (section.ttl_left ? ` · expires in ${section.ttl_left}` : "")),
        bar,
        el("pre", {}, section.content),
        el("details", {}, el("summary", {}, `history (${section.history.length})`), el("ul", {}, history)),
      ));
    }
    if (!data.sections.length) list.append(el("p", { class: "note" }, "The agent has written no section yet."));
  }

  // --- Observations ------------------------------------------------------------------------

  function drawObservations(data) {
    const body = clear($("obs-table").querySelector("tbody"));
    for (const entry of data.entries) {
      body.append(el("tr", {},
        el("td", { class: "mono" }, entry.scratchpad_id), el("td", { class: "mono" }, entry.turn_id), el("td", {}, entry.step ?? "–"),
        el("td", {}, entry.executor || "–"), el("td", {}, entry.kind), el("td", { class: "num" }, `${entry.size_bytes} B`),
        el("td", { class: "num" }, entry.lines), el("td", {}, day(entry.created)), el("td", {}, `in ${entry.expires_in}`),
        el("td", {}, el("pre", {}, entry.summary))));
    }
    $("obs-empty").hidden = data.entries.length > 0;
  }

  // --- Deliveries --------------------------------------------------------------------------

  const DELIVERY_MARKS = { delivered: "●", held: "○", missed: "✕" };

  function drawDeliveries(data) {
    const body = clear($("deliveries-table").querySelector("tbody"));
    for (const session of data.sessions) {
      const turns = el("td", { class: "mono" });
      for (const turn of session.turns) {
        turns.append(el("span", { class: `turn ${turn.mark}`, title: turn.why ? `${clock(turn.at)} ${turn.mark}: ${turn.why}` : `${clock(turn.at)} ${turn.mark}` }, DELIVERY_MARKS[turn.mark] || "?"));
      }
      body.append(el("tr", { class: session.missed_last ? "bad" : "" },
        el("td", {}, `${session.host} ${session.session.slice(0, 8)}`), turns, el("td", {}, session.line)));
    }
    $("deliveries-empty").hidden = data.sessions.length > 0;
  }

  const pages = {
    now: ["/api/now", drawNow],
    mood: [() => `/api/mood?hours=${encodeURIComponent($("mood-hours").value)}` + (until ? `&until=${encodeURIComponent(until)}` : ""), drawMood],
    memory: ["/api/memory", drawMemory],
    sections: ["/api/sections", drawSections],
    observations: ["/api/observations", drawObservations],
    deliveries: ["/api/deliveries", drawDeliveries],
  };

  let loading = Promise.resolve();
  function load() {
    const [path, draw] = pages[page];
    loading = loading.then(async () => {
      try {
        const data = await getJSON(typeof path === "function" ? path() : path);
        zone = data.timezone || zone;
        draw(data);
        document.body.dataset.version = String(data.version);
        showError("");
      } catch (error) {
        showError(`Cannot load this page's data: ${error.message}`);
      }
    });
    return loading;
  }

  function listen() {
    const live = $("live");
    const source = new EventSource("/api/events");
    source.addEventListener("change", (event) => {
      live.textContent = "live";
      live.className = "live on";
      const version = String(JSON.parse(event.data).version);
      if (version !== document.body.dataset.version) load();
    });
    source.onerror = () => {
      live.textContent = "reconnecting…";
      live.className = "live off";
    };
  }

  if (page === "mood") $("mood-hours").addEventListener("change", load);
  load().then(listen);
})();
