// gossipd's live dashboard (docs/monitoring.md#dashboard): polls `cluster` (this node's /cluster) once a
// second and updates the page in place. Plain JS, no build step: Chart.js 3 (global Chart) and d3 v3
// (global d3, d3.layout.force) are Debian's copies, embedded in the binary next to this file.
//
// Meant to stay open for hours: every array is bounded, charts are created once and redrawn with
// update('none') (no animation, no new objects), the d3 joins reuse their elements, and the event list is
// rebuilt only when it changed. Text from /cluster (ids, endpoints, event texts: a peer can put anything
// in them) is only ever set with textContent / d3 .text(), never parsed as HTML.
'use strict';
(() => {
  const POLL_MS = 1000;
  const FETCH_TIMEOUT_MS = 5000;  // a hung request counts as failed, so that polling never stops
  const MAX_POINTS = 2000;        // per series; past it every other point is dropped (see push)
  const MAX_EVENTS = 200;
  const STATES = new Set(['alive', 'suspect', 'dead', 'left']);
  const EVENT_KINDS = new Set(['joined', 'suspected', 'refuted', 'dead', 'left', 'rejoined', 'state_sent',
                               'state_received']);
  const PALETTE = d3.scale.category10().range();

  const $ = (id) => document.getElementById(id);
  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const fmt = (v, digits) => (isNum(v) ? v.toFixed(digits) : '–');
  const clock = (ms) => new Date(ms).toLocaleTimeString();
  const setText = (id, text) => { const e = $(id); if (e.textContent !== text) e.textContent = text; };
  const stateOf = (m) => (STATES.has(m.state) ? m.state : 'alive');
  // Members that count for the cluster figures: not dead or gone, and with a summary received.
  const live = (c) => c.members.filter((m) => m.status && (m.state === 'alive' || m.state === 'suspect'));

  // A series is an array of {x, y} with x increasing. `rewind` (a node's own curve): a point at or before
  // the last x replaces the points from there on (a node restarted from an older checkpoint redoes those
  // rounds). Without it (cluster curves) such a point is ignored: a joiner starting at round 0 would
  // otherwise pull the mean round back and erase the curve. Past MAX_POINTS every other point is dropped
  // (rather than the oldest): the curve keeps everything since the page opened, at a coarser step.
  function push(series, x, y, rewind) {
    if (!isNum(x) || !isNum(y)) return;
    if (series.length && series[series.length - 1].x >= x) {
      if (!rewind) return;
      while (series.length && series[series.length - 1].x >= x) series.pop();
    }
    if (series.length >= MAX_POINTS) {
      let j = 0;
      for (let i = 0; i < series.length; i += 2) series[j++] = series[i];
      series.length = j;
    }
    series.push({ x, y });
  }

  // ---- charts: created once; datasets are added per node and updated in place.
  function lineChart(id, { xTime = false, yFormat = null, yMin, yLog = false } = {}) {
    const ticks = (f) => (f ? { callback: f, maxTicksLimit: 6 } : { maxTicksLimit: 6 });
    return new Chart($(id), {
      type: 'line',
      data: { datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        parsing: false, normalized: true,  // data is already {x, y} sorted by x
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        elements: { point: { radius: 0, hitRadius: 4 }, line: { borderWidth: 1.5 } },
        scales: {
          x: { type: 'linear', title: { display: true, text: xTime ? 'time' : 'round' },
               ticks: ticks(xTime ? clock : null) },
          y: { type: yLog ? 'logarithmic' : 'linear', min: yMin, ticks: ticks(yFormat) },
        },
        plugins: {
          // With many nodes a legend entry per node would bury the chart: past 10 only the mean is named.
          legend: { labels: { boxWidth: 12, filter: (item, data) => data.datasets.length <= 11 || item.datasetIndex === 0 } },
          tooltip: { callbacks: { title: (items) => (items.length ? (xTime ? clock(items[0].parsed.x) : `round ${items[0].parsed.x}`) : '') } },
        },
      },
    });
  }
  const dataset = (label, color, width) => ({ label, data: [], borderColor: color, backgroundColor: color, borderWidth: width });
  const pct = (v) => `${Math.round(v * 100)}%`;
  const PER_NODE = ['loss', 'accuracy', 'disagreement'];  // charts with a curve per node and the cluster mean
  const charts = {
    loss: lineChart('loss'),
    accuracy: lineChart('accuracy', { yFormat: pct }),
    disagreement: lineChart('disagreement', { yLog: true, yFormat: (v) => v.toPrecision(2) }),
    bytes: lineChart('bytes', { xTime: true, yMin: 0 }),
    ratio: lineChart('ratio', { xTime: true, yMin: 0 }),
  };
  // The cluster mean is dataset 0 of the per-node charts: thick, dark, and on top (Chart.js draws the
  // first dataset last).
  for (const k of PER_NODE) charts[k].data.datasets.push(dataset('cluster mean', '#1d2430', 3));
  charts.bytes.data.datasets.push(dataset('MB sent', '#3b6fd6', 2));
  charts.ratio.data.datasets.push(dataset('compression ratio', '#8e44ad', 2));

  function nodeDataset(chart, id) {
    let ds = chart.data.datasets.find((d) => d.nodeId === id);
    if (!ds) {
      ds = { ...dataset(`node ${id}`, PALETTE[id % PALETTE.length], 1.5), nodeId: id };
      chart.data.datasets.push(ds);
    }
    return ds;
  }

  // Bytes sent by each node id over all its lives. A restarted node counts from 0 again, and a node gone
  // from the view takes its summary along; without this the cluster total dropped at every restart. A
  // count lower than the last one seen is a new life: the last one's count is kept in `earlier`.
  const sentById = new Map();  // id -> { current, earlier }
  function totalSent(members) {
    for (const m of members) {
      if (!m.status || !isNum(m.status.bytes_sent)) continue;
      const e = sentById.get(m.id) || { current: 0, earlier: 0 };
      if (m.status.bytes_sent < e.current) e.earlier += e.current;
      e.current = m.status.bytes_sent;
      sentById.set(m.id, e);
    }
    let sum = 0;
    for (const e of sentById.values()) sum += e.earlier + e.current;
    return sum;
  }

  function updateCharts(c) {
    const ids = new Set(c.members.map((m) => m.id));
    for (const k of PER_NODE) {
      const chart = charts[k];
      // A member gone from the view altogether takes its curve along (bounds the datasets in a churny cluster).
      const kept = chart.data.datasets.filter((d) => d.nodeId === undefined || ids.has(d.nodeId));
      if (kept.length !== chart.data.datasets.length) chart.data.datasets = kept;
      for (const m of c.members) {
        if (!m.status || (chart.options.scales.y.type === 'logarithmic' && !(m.status[k] > 0))) continue;  // log axis
        push(nodeDataset(chart, m.id).data, m.status.round, m.status[k], true);
      }
    }
    const sts = live(c).map((m) => m.status);
    const meanRound = mean(sts.map((s) => s.round).filter(isNum));
    if (meanRound !== null) {
      const x = Math.round(meanRound);
      push(charts.loss.data.datasets[0].data, x, mean(sts.map((s) => s.loss).filter(isNum)), false);
      push(charts.accuracy.data.datasets[0].data, x, mean(sts.map((s) => s.accuracy).filter(isNum)), false);
      push(charts.disagreement.data.datasets[0].data, x, mean(sts.map((s) => s.disagreement).filter((v) => isNum(v) && v > 0)), false);
    }
    // Traffic: every member with a summary (a dead node's bytes were still sent); ratios only once known.
    const all = c.members.filter((m) => m.status).map((m) => m.status);
    const t = isNum(c.time_ms) ? c.time_ms : Date.now();
    const sent = totalSent(c.members);
    if (all.length) push(charts.bytes.data.datasets[0].data, t, sent / 1e6, false);
    push(charts.ratio.data.datasets[0].data, t, mean(all.map((s) => s.compression_ratio).filter((v) => isNum(v) && v > 0)), false);
    for (const chart of Object.values(charts)) chart.update('none');
    return { meanRound, rps: mean(sts.map((s) => s.rounds_per_second).filter(isNum)) };
  }

  // ---- topology: a d3 v3 force layout. Node objects persist across polls (keyed by id) so positions are
  // kept; the layout is restarted only when the set of members or edges changes, and otherwise only
  // colours, widths and titles are touched (no jitter, and no CPU once the layout has cooled).
  const W = 640, H = 360, R = 16;
  const svg = d3.select('#graph').attr('viewBox', `0 0 ${W} ${H}`);
  const linkLayer = svg.append('g');
  const nodeLayer = svg.append('g');
  let links = linkLayer.selectAll('line'), nodes = nodeLayer.selectAll('g');
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  const force = d3.layout.force().size([W, H]).charge(-500).linkDistance(90).gravity(0.1).on('tick', () => {
    nodes.each((d) => { d.x = clamp(d.x, R, W - R); d.y = clamp(d.y, R, H - R); })
      .attr('transform', (d) => `translate(${d.x},${d.y})`);
    links.attr('x1', (l) => l.source.x).attr('y1', (l) => l.source.y).attr('x2', (l) => l.target.x).attr('y2', (l) => l.target.y);
  });
  const graphNodes = new Map();  // id -> the layout's node object
  let graphShape = '';

  function drawGraph(c) {
    const ids = new Set(c.members.map((m) => m.id));
    for (const id of graphNodes.keys()) if (!ids.has(id)) graphNodes.delete(id);
    for (const m of c.members) {
      // New members start near the centre with a little spread (all at one point, forces cannot separate them).
      if (!graphNodes.has(m.id)) graphNodes.set(m.id, { id: m.id, x: W / 2 + 40 * (Math.random() - 0.5), y: H / 2 + 40 * (Math.random() - 0.5) });
      graphNodes.get(m.id).m = m;
    }
    const edges = (Array.isArray(c.edges) ? c.edges : []).filter((e) => graphNodes.has(e.a) && graphNodes.has(e.b))
      .map((e) => ({ source: graphNodes.get(e.a), target: graphNodes.get(e.b), weight: e.weight, key: `${e.a}-${e.b}` }));
    const selfWeights = c.self_weights || {};

    links = linkLayer.selectAll('line').data(edges, (l) => l.key);
    links.exit().remove();
    links.enter().append('line').append('title');
    links.attr('stroke-width', (l) => 1 + 10 * clamp(isNum(l.weight) ? l.weight : 0, 0, 1))
      .select('title').text((l) => `${l.source.id} – ${l.target.id}: weight ${fmt(l.weight, 4)}`);

    nodes = nodeLayer.selectAll('g').data([...graphNodes.values()], (d) => d.id);
    nodes.exit().remove();
    const enter = nodes.enter().append('g').call(force.drag);
    enter.append('circle').attr('r', R);
    enter.append('text');
    enter.append('title');
    nodes.select('circle')
      .attr('class', (d) => `member ${stateOf(d.m)}${d.id === c.self ? ' self' : ''}`)
      .attr('data-id', (d) => d.id).attr('data-state', (d) => stateOf(d.m));
    nodes.select('text').text((d) => d.id);
    nodes.select('title').text((d) => {
      const m = d.m, s = m.status;
      const lines = [`node ${m.id}${m.id === c.self ? ' (serving this page)' : ''}: ${stateOf(m)}, incarnation ${m.incarnation ?? '?'}`,
                     `${m.endpoint ?? ''}`];
      if (isNum(selfWeights[m.id])) lines.push(`self weight ${fmt(selfWeights[m.id], 4)}`);
      if (s) lines.push(`${s.state ?? ''} round ${s.round ?? '?'} of ${s.rounds ?? '?'}, loss ${fmt(s.loss, 4)}, accuracy ${fmt(s.accuracy, 4)}`,
                        `${fmt(s.rounds_per_second, 1)} rounds/s, ${s.neighbors ?? '?'} neighbours, summary ${fmt(s.age_s, 1)} s old`);
      else lines.push('no summary yet');
      return lines.join('\n');
    });

    const shape = [...graphNodes.keys()].join(',') + '|' + edges.map((l) => l.key).join(',');
    if (shape !== graphShape) {
      graphShape = shape;
      force.nodes([...graphNodes.values()]).links(edges).start();
    }
  }

  // ---- events: the server keeps the last 200, oldest first; shown newest first.
  let eventsKey = '';
  function drawEvents(c) {
    const events = (Array.isArray(c.events) ? c.events : []).filter((e) => e && typeof e === 'object').slice(-MAX_EVENTS);
    const last = events[events.length - 1];
    const key = last ? `${events.length}|${last.time_ms}|${last.node}|${last.kind}|${last.text}` : '';
    if (key === eventsKey) return;
    eventsKey = key;
    $('events').replaceChildren(...events.reverse().map((e) => {
      const li = document.createElement('li');
      const kind = EVENT_KINDS.has(e.kind) ? e.kind : 'other';
      li.className = `ev-${kind}`;
      li.dataset.kind = kind;
      const time = document.createElement('time'), k = document.createElement('span');
      time.textContent = isNum(e.time_ms) ? clock(e.time_ms) : '';
      k.className = 'kind';
      k.textContent = kind.replace('_', ' ');
      li.append(time, k, String(e.text ?? ''));
      return li;
    }));
  }

  function render(c) {
    if (!c || typeof c !== 'object' || !Array.isArray(c.members)) throw new Error('/cluster: no members array');
    c.members = c.members.filter((m) => m && isNum(m.id));
    const { meanRound, rps } = updateCharts(c);
    drawGraph(c);
    drawEvents(c);
    setText('self', isNum(c.self) ? `node ${c.self}` : '');
    document.title = isNum(c.self) ? `gossipd node ${c.self}` : 'gossipd';
    setText('algorithm', String(c.algorithm ?? '–'));
    setText('compressor', String(c.compressor ?? '–'));
    setText('topology', String(c.topology ?? '–'));
    const count = (st) => c.members.filter((m) => stateOf(m) === st).length;
    const suspects = count('suspect');
    setText('alive', `${count('alive') + suspects} of ${c.members.length}${suspects ? ` (${suspects} suspect)` : ''}`);
    setText('spectral-gap', fmt(c.spectral_gap, 3));
    setText('mean-round', meanRound === null ? '–' : `${Math.round(meanRound)}${isNum(c.rounds) ? ` of ${c.rounds}` : ''}`);
    setText('rounds-per-second', fmt(rps, 1));
  }

  let lastUpdate = null;
  function setConnection(ok, why) {
    const e = $('conn');
    e.className = `conn ${ok ? 'live' : 'disconnected'}`;
    e.textContent = ok ? `live · ${clock(lastUpdate)}`
      : `disconnected (${why}) · retrying${lastUpdate ? ` · last update ${clock(lastUpdate)}` : ''}`;
  }

  // One request at a time: the next poll is scheduled when this one ends, so a slow server never gets a
  // pile of requests, and a failed one is simply retried a second later.
  async function poll() {
    const started = performance.now();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
    let data = null;
    try {
      const r = await fetch('cluster', { cache: 'no-store', signal: abort.signal });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      data = await r.json();
    } catch (e) {
      setConnection(false, e.name === 'AbortError' ? 'timeout' : e.message);
    } finally {
      clearTimeout(timer);
    }
    if (data !== null) {
      try {
        render(data);
        lastUpdate = Date.now();
        setConnection(true);
      } catch (e) {
        console.error('dashboard: cannot show /cluster:', e);  // a bug or a schema change, not the network
        setConnection(false, e.message);
      }
    }
    setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - started)));
  }
  poll();
})();
