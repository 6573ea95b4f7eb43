// spillway's dashboard: polls the gateway's admin API with the admin key
// the operator signs in with (kept in this tab's sessionStorage, sent as a
// bearer token) and renders each panel with plain DOM calls. Text goes in
// through textContent only: nothing the gateway returns is parsed as HTML.
'use strict';

(() => {
  const KEY = 'spillway_admin_key';
  const params = new URLSearchParams(location.search);
  // ?refresh=MS sets the poll interval (250 ms to 60 s; default 2 s).
  const refreshMs = Math.min(60000, Math.max(250, Number(params.get('refresh')) || 2000));
  // Usage reads the ledger: every fifth round is enough.
  const usageEvery = 5;
  const palette = ['#0969da', '#8250df', '#1a7f37', '#bf8700', '#0a8f9e', '#cf6b00', '#6e7781', '#a40e26'];

  let timer = null;
  let round = 0;

  const $ = (sel, root = document) => root.querySelector(sel);

  // el builds an element: attrs are attributes (class, data-*, ...),
  // children are nodes or text.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  const adminKey = () => sessionStorage.getItem(KEY) || '';

  // api fetches a gateway path with the admin key, if any. It resolves to
  // {status, body}; status 0 when the gateway did not answer.
  async function api(path, init = {}) {
    const headers = new Headers(init.headers || {});
    const k = adminKey();
    if (k) headers.set('Authorization', 'Bearer ' + k);
    let resp;
    try {
      resp = await fetch(path, { ...init, headers, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      return { status: 0, body: null };
    }
    let body = null;
    try { body = await resp.json(); } catch (e) { /* not JSON */ }
    return { status: resp.status, body };
  }

  function errorCode(r) {
    return r.body && r.body.error ? (r.body.error.code || r.body.error.type || '') : '';
  }

  // describe says what a failed call means to the operator.
  function describe(r) {
    if (r.status === 0) return 'The gateway did not answer.';
    if (r.status === 401) return '401: this panel needs the gateway\'s admin key. Sign in above.';
    if (errorCode(r) === 'admin_disabled') return 'The admin API is disabled: this gateway has no admin key (spillway admin rotate makes one).';
    const msg = r.body && r.body.error && r.body.error.message;
    return r.status + ': ' + (msg || 'the gateway refused this call.');
  }

  function panelStatus(panel, text, bad) {
    const p = $('#' + panel + ' .panel-status');
    p.textContent = text || '';
    p.classList.toggle('bad', !!bad);
  }

  function showBody(panel, show) {
    const b = $('#' + panel + ' .panel-body');
    if (b) b.hidden = !show;
  }

  // settle renders a call's failure in its panel; it returns true when
  // the call succeeded and the panel should render the body.
  function settle(panel, r) {
    const section = $('#' + panel);
    if (r.status === 200) {
      section.dataset.state = 'ok';
      panelStatus(panel, '');
      showBody(panel, true);
      return true;
    }
    section.dataset.state = r.status === 401 ? 'unauthorized' : 'error';
    panelStatus(panel, describe(r), true);
    showBody(panel, false);
    return false;
  }

  const fmtInt = (n) => Number(n || 0).toLocaleString('en-US');
  const fmtPct = (x) => (100 * x).toFixed(1) + '%';
  const fmtTime = (s) => {
    const d = new Date(s);
    return isNaN(d) ? '' : d.toLocaleTimeString('en-GB', { hour12: false });
  };
  const fmtUSD = (micro) => '$' + (Number(micro || 0) / 1e6).toFixed(micro && Math.abs(micro) < 10000 ? 6 : 2);

  function fill(tbody, rows) {
    tbody.replaceChildren(...rows);
  }

  // Health ----------------------------------------------------------

  function renderHealth(rep) {
    const deps = rep.deployments || [];
    fill($('#health-deployments tbody'), deps.map((d) => {
      const failures = Object.entries(d.failures || {}).map(([k, v]) => k + ' ' + v).join(', ');
      const cls = d.healthy ? '' : (d.state === 'open' || d.state === 'suppressed' ? 'bad' : 'warn');
      return el('tr', { class: cls, 'data-deployment': d.deployment, 'data-state': d.state },
        el('th', { scope: 'row' }, d.deployment),
        el('td', {}, el('span', { class: 'state state-' + d.state }, d.state.replace('_', ' '))),
        el('td', {}, d.reason || ''),
        el('td', { class: 'num' }, fmtPct(d.error_rate || 0)),
        el('td', { class: 'num' }, d.first_token_p95_ms ? Math.round(d.first_token_p95_ms) + ' ms' : '–'),
        el('td', { class: 'num' }, fmtInt(d.attempts)),
        el('td', { class: 'num' }, fmtInt(d.successes)),
        el('td', {}, failures || '–'));
    }));
    if (deps.length === 0) {
      fill($('#health-deployments tbody'), [el('tr', {}, el('td', { colspan: 8 }, 'No deployment has been called yet.'))]);
    }
    const routes = rep.routes || [];
    fill($('#health-routes tbody'), routes.map((r) => {
      const cls = r.healthy_rungs === 0 ? 'bad' : (r.healthy_rungs < r.rungs ? 'warn' : '');
      return el('tr', { class: cls, 'data-route': r.model },
        el('th', { scope: 'row' }, r.model), el('td', {}, r.pool), el('td', {}, r.exact_model),
        el('td', { class: 'num' }, r.healthy_rungs + ' of ' + r.rungs));
    }));
    $('#models').replaceChildren(...routes.map((r) => el('option', { value: r.model })));
  }

  // Traffic ---------------------------------------------------------

  function colorsFor(deps) {
    const c = {};
    deps.forEach((d, i) => { c[d.deployment] = palette[i % palette.length]; });
    return c;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  // chart draws one bar per bucket: served attempts stacked by
  // deployment, failed attempts in red on top, and a mark above each
  // bucket with failovers. The tables below hold the same numbers.
  function chart(t, colors) {
    const W = 900, H = 160, top = 14, bottom = 16;
    const n = t.buckets.length || 1;
    const slot = W / n;
    let max = 1;
    for (const b of t.buckets) {
      let sum = 0;
      for (const d of b.deployments) sum += d.served + d.failed;
      max = Math.max(max, sum);
    }
    const scale = (H - top - bottom) / max;
    const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', preserveAspectRatio: 'none',
      'aria-label': 'Attempts per ' + t.bucket_seconds + '-second bucket: served stacked by deployment, failed in red, failovers marked above' });
    t.buckets.forEach((b, i) => {
      let y = H - bottom;
      const x = i * slot + 1;
      const w = Math.max(1, slot - 2);
      const parts = [];
      for (const d of b.deployments) {
        if (d.served > 0) {
          const h = d.served * scale;
          y -= h;
          root.append(svg('rect', { x, y, width: w, height: h, fill: colors[d.deployment] || '#999' }));
        }
        parts.push(d.deployment + ' ' + d.served + ' served, ' + d.failed + ' failed');
      }
      for (const d of b.deployments) {
        if (d.failed > 0) {
          const h = d.failed * scale;
          y -= h;
          root.append(svg('rect', { x, y, width: w, height: h, class: 'failed' }));
        }
      }
      const fo = b.failovers.reduce((s, f) => s + f.count, 0);
      if (fo > 0) {
        root.append(svg('path', { d: `M${x + w / 2 - 4},${y - 10} l8,0 l-4,7 z`, class: 'failover' }));
        parts.push(fo + ' failover' + (fo === 1 ? '' : 's'));
      }
      if (parts.length) {
        root.append(svg('rect', { x: i * slot, y: 0, width: slot, height: H, fill: 'transparent' },
          svg('title', {}, fmtTime(b.start) + ': ' + parts.join('; '))));
      }
    });
    const first = t.buckets[0], last = t.buckets[t.buckets.length - 1];
    if (first && last) {
      root.append(svg('text', { x: 2, y: H - 3, class: 'axis' }, fmtTime(first.start)));
      root.append(svg('text', { x: W - 2, y: H - 3, class: 'axis', 'text-anchor': 'end' }, fmtTime(last.start)));
    }
    return root;
  }

  function renderTraffic(t) {
    const deps = t.deployments || [];
    const colors = colorsFor(deps);
    const minutes = Math.round((t.buckets.length * t.bucket_seconds) / 60);
    const width = t.bucket_seconds === 60 ? 'one-minute' : t.bucket_seconds + '-second';
    $('#traffic-window').textContent = 'The last ' + minutes + ' minutes, in ' + width +
      ' buckets, kept in the gateway\'s memory (this replica only, since it started).' +
      (t.overflow ? ' ' + fmtInt(t.overflow) + ' attempts were past a bucket\'s bounds and are not shown apart.' : '');
    $('#traffic-chart').replaceChildren(chart(t, colors));
    $('#traffic-legend').replaceChildren(...deps.map((d) => {
      const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.backgroundColor = colors[d.deployment];
      return el('li', {}, sw, d.deployment);
    }), el('li', {}, el('span', { class: 'swatch failed-swatch', 'aria-hidden': 'true' }), 'failed attempts'));
    const failedSwatch = $('#traffic-legend .failed-swatch');
    if (failedSwatch) failedSwatch.style.backgroundColor = '#cf222e';
    const served = deps.reduce((s, d) => s + d.served, 0);
    fill($('#traffic-deployments tbody'), deps.length ? deps.map((d) => el('tr', { 'data-deployment': d.deployment },
      el('th', { scope: 'row' }, d.deployment),
      el('td', { class: 'num', 'data-served': d.served }, fmtInt(d.served)),
      el('td', { class: 'num' }, served ? fmtPct(d.served / served) : '–'),
      el('td', { class: 'num', 'data-failed': d.failed }, fmtInt(d.failed)))) :
      [el('tr', {}, el('td', { colspan: 4 }, 'No attempts in this window.'))]);
    const fos = t.failovers || [];
    $('#failovers-empty').hidden = fos.length > 0;
    $('#traffic-failovers').hidden = fos.length === 0;
    fill($('#traffic-failovers tbody'), fos.map((f) => el('tr', { 'data-from': f.from, 'data-to': f.to },
      el('td', {}, f.route), el('td', {}, f.from), el('td', {}, f.to), el('td', { class: 'num', 'data-count': f.count }, fmtInt(f.count)))));
  }

  // Quality ---------------------------------------------------------

  // value renders any JSON value, bounded: arrays of objects as tables,
  // objects as definition lists, the rest as text.
  function value(v, depth) {
    if (v === null || v === undefined) return document.createTextNode('–');
    if (typeof v !== 'object') return document.createTextNode(typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(4) : String(v));
    if (depth >= 3) return el('code', {}, JSON.stringify(v).slice(0, 200));
    if (Array.isArray(v)) {
      if (v.length === 0) return document.createTextNode('none');
      if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
        const cols = [];
        for (const row of v.slice(0, 200)) for (const k of Object.keys(row)) if (!cols.includes(k)) cols.push(k);
        return el('table', {},
          el('thead', {}, el('tr', {}, ...cols.map((c) => el('th', { scope: 'col' }, c.replaceAll('_', ' '))))),
          el('tbody', {}, ...v.slice(0, 200).map((row) => el('tr', {}, ...cols.map((c) => el('td', {}, value(row[c], depth + 1)))))));
      }
      return document.createTextNode(v.slice(0, 50).map((x) => typeof x === 'object' ? JSON.stringify(x) : String(x)).join(', '));
    }
    const dl = el('dl', { class: 'kv' });
    for (const [k, x] of Object.entries(v)) dl.append(el('dt', {}, k.replaceAll('_', ' ')), el('dd', {}, value(x, depth + 1)));
    return dl;
  }

  // table builds a table of rows: cols are [heading, cell(row)] pairs,
  // attrs(row) the row's attributes.
  function table(id, cols, rows, attrs) {
    return el('table', { id },
      el('thead', {}, el('tr', {}, ...cols.map(([h]) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...rows.map((row) => el('tr', attrs ? attrs(row) : {}, ...cols.map(([, cell]) => {
        const v = cell(row);
        return v instanceof Node && (v.nodeName === 'TD' || v.nodeName === 'TH') ? v : el('td', {}, v);
      })))));
  }

  const num = (v) => el('td', { class: 'num' }, v);
  const rate = (x, n) => fmtPct(x || 0) + ' of ' + fmtInt(n);

  // renderQualityReport renders GET /v1/admin/quality's report: the
  // active alerts, each pool's comparisons, and each deployment's signals
  // (a rate always with the count it is over) and field population.
  function renderQualityReport(q) {
    const parts = [el('p', { class: 'note' }, 'Content-free aggregates of the answers ' +
      (q.scope === 'replica' ? 'this replica served' : 'served') + ' since it started; divergence is tested against each pool\'s primary.')];
    const alerts = q.alerts || [];
    parts.push(el('h3', {}, 'Alerts'), alerts.length ? table('quality-alerts', [
      ['Pool', (a) => a.pool], ['Deployment', (a) => a.deployment], ['Signal', (a) => a.signal + (a.field ? ' ' + a.field : '')],
      ['Direction', (a) => a.direction], ['Primary', (a) => a.primary + ' ' + fmtPct(a.primary_rate)],
      ['Deployment rate', (a) => num(fmtPct(a.deployment_rate))], ['Answers tested', (a) => num(fmtInt(a.answers))],
      ['Since', (a) => fmtTime(a.since)], ['Ejected', (a) => a.ejected ? 'yes: ineligible until cleared' : 'no'],
      ['', (a) => el('button', { type: 'button', class: 'clear', 'data-pool': a.pool, 'data-deployment': a.deployment,
        title: 'POST /v1/admin/quality/clear: the deployment\'s alerts in this pool are cleared and its tests restart' }, 'Clear')],
    ], alerts, (a) => ({ class: 'bad', 'data-deployment': a.deployment, 'data-signal': a.signal })) :
      el('p', { class: 'note', id: 'quality-no-alerts' }, 'No divergence alert.'));

    const pairs = [];
    for (const p of q.pools || []) for (const s of p.secondaries || []) pairs.push({ ...s, pool: p.pool, primary: p.primary, eject: p.eject });
    if (pairs.length) {
      parts.push(el('h3', {}, 'Compared with the primary'), table('quality-pools', [
        ['Pool', (x) => x.pool], ['Primary', (x) => x.primary], ['Secondary', (x) => x.deployment],
        ['Answers tested', (x) => num(fmtInt(x.answers_tested))], ['Alerts', (x) => num(fmtInt(x.alerts))],
        ['On divergence', (x) => x.ejected ? 'ejected' : (x.eject ? 'eject' : 'alert only')],
      ], pairs, (x) => ({ class: x.alerts ? 'bad' : '', 'data-deployment': x.deployment })));
    }

    const deps = q.deployments || [];
    if (!deps.length) {
      parts.push(el('p', { class: 'note', id: 'quality-no-answers' }, 'No answer measured yet.'));
      return parts;
    }
    const signals = [];
    for (const d of deps) for (const s of d.signals || []) if (!signals.includes(s.signal)) signals.push(s.signal);
    parts.push(el('h3', {}, 'Signals per deployment'), table('quality-deployments', [
      ['Deployment', (d) => el('th', { scope: 'row' }, d.deployment)],
      ['Answers', (d) => num(fmtInt(d.answers))],
      ...signals.map((name) => [name.replaceAll('_', ' '), (d) => {
        const s = (d.signals || []).find((x) => x.signal === name);
        return num(s && s.answers ? rate(s.rate, s.answers) : '–');
      }]),
      ['Length p50/p90/p99 (bytes)', (d) => num(d.length_bytes ? [d.length_bytes.p50, d.length_bytes.p90, d.length_bytes.p99].map(fmtInt).join(' / ') : '–')],
      ['Finish reasons', (d) => (d.finish_reasons || []).map((f) => f.reason + ' ' + fmtPct(f.rate)).join(', ') || '–'],
    ], deps, (d) => ({ 'data-deployment': d.deployment, 'data-answers': d.answers })));
    const fields = [];
    for (const d of deps) for (const f of (d.fields || []).slice(0, 100)) fields.push({ ...f, deployment: d.deployment });
    if (fields.length) {
      parts.push(el('h3', {}, 'Field population (declared fields of structured answers)'), table('quality-fields', [
        ['Deployment', (f) => f.deployment], ['Field', (f) => el('code', {}, f.path)], ['Populated', (f) => num(rate(f.rate, f.answers))],
      ], fields.slice(0, 500)));
    }
    return parts;
  }

  function renderQuality(r) {
    const section = $('#quality');
    const body = $('#quality-body');
    if (r.status === 404 && errorCode(r) !== 'admin_disabled') {
      section.dataset.state = 'empty';
      panelStatus('quality', '');
      body.hidden = false;
      body.replaceChildren(el('p', { class: 'note' }, 'No quality data (GET /v1/admin/quality answered 404).'));
      return;
    }
    if (!settle('quality', r)) return;
    const q = r.body;
    if (q && typeof q === 'object' && Array.isArray(q.deployments)) {
      body.replaceChildren(...renderQualityReport(q));
    } else {
      // A shape this page does not know: show it as it comes.
      body.replaceChildren(value(q, 0));
    }
  }

  // Usage -----------------------------------------------------------

  function renderUsage(u) {
    $('#usage-window').textContent = 'Settled requests from ' + new Date(u.from).toLocaleString('en-GB') +
      ' to ' + new Date(u.to).toLocaleString('en-GB') + ', from the ledger.';
    const rows = u.rows || [];
    fill($('#usage-table tbody'), rows.length ? rows.map((r) => el('tr', { 'data-team': r.group.team, 'data-model': r.group.model },
      el('td', {}, r.group.team || '–'), el('td', {}, r.group.model || '–'),
      el('td', { class: 'num' }, fmtInt(r.requests)), el('td', { class: 'num' }, fmtInt(r.succeeded)),
      el('td', { class: 'num' }, fmtInt(r.failed)), el('td', { class: 'num' }, fmtInt(r.failed_over)),
      el('td', { class: 'num' }, fmtInt(r.input_tokens)), el('td', { class: 'num' }, fmtInt(r.output_tokens)),
      el('td', { class: 'num' }, fmtUSD(r.cost_micro_usd)))) :
      [el('tr', {}, el('td', { colspan: 9 }, 'No settled requests in this period.'))]);
  }

  // Failures --------------------------------------------------------

  function renderFailures(f) {
    const list = f.failures || [];
    $('#failures-note').textContent = list.length ?
      'The newest ' + list.length + ' of ' + fmtInt(f.total) + ' failed attempts since the gateway started (it keeps ' + f.capacity + ').' :
      'No failed attempt since the gateway started.';
    fill($('#failures-table tbody'), list.map((x) => el('tr', { 'data-deployment': x.deployment, 'data-verdict': x.verdict },
      el('td', {}, el('time', { datetime: x.time }, fmtTime(x.time))),
      el('td', {}, el('code', {}, x.request_id)),
      el('td', {}, x.route),
      el('td', {}, x.deployment),
      el('td', {}, x.verdict + (x.timeout ? ' (' + x.timeout + ' timeout)' : '') + (x.retry ? ', retry' : '')),
      el('td', { class: 'num' }, x.http_status || 'none'),
      el('td', { class: 'num' }, x.duration_ms ? fmtInt(x.duration_ms) + ' ms' : '<1 ms'),
      el('td', {}, x.served_by || 'nobody'))));
    $('#failures-table').hidden = list.length === 0;
  }

  // Explain ---------------------------------------------------------

  async function explain(ev) {
    ev.preventDefault();
    const form = ev.target;
    const data = new FormData(form);
    const q = new URLSearchParams();
    for (const k of ['org', 'team', 'workload', 'residency', 'priority']) {
      const v = String(data.get(k) || '').trim();
      if (v) q.set(k, v);
    }
    // A placeholder message: explain reads the request's shape, and the
    // page never sends (or shows) anyone's prompt.
    const body = { model: String(data.get('model') || '').trim(), messages: [{ role: 'user', content: 'route explain' }] };
    const mt = Number(data.get('max_tokens'));
    if (mt > 0) body.max_tokens = mt;
    if (data.get('stream')) body.stream = true;
    const r = await api('/v1/admin/explain' + (q.size ? '?' + q : ''), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const out = $('#explain-result');
    const section = $('#explain');
    if (r.status !== 200) {
      section.dataset.state = r.status === 401 ? 'unauthorized' : 'error';
      panelStatus('explain', describe(r), true);
      out.replaceChildren();
      return;
    }
    section.dataset.state = 'ok';
    panelStatus('explain', '');
    const ex = r.body;
    const facts = el('dl', { class: 'kv', id: 'explain-facts' },
      el('dt', {}, 'Verdict'), el('dd', { 'data-verdict': ex.verdict }, ex.verdict),
      el('dt', {}, 'Pool'), el('dd', {}, (ex.pool || '–') + (ex.exact_model ? ' (' + ex.exact_model + ')' : '')),
      el('dt', {}, 'Order'), el('dd', { 'data-order': (ex.order || []).join(',') }, (ex.order || []).join(' → ') || 'no rung'));
    for (const [k, label] of [['last_resort', 'Last-resort probe'], ['exercise', 'Exercise'], ['sticky', 'Sticky'], ['rank', 'Ranking'], ['priority', 'Priority']]) {
      if (ex[k]) facts.append(el('dt', {}, label), el('dd', {}, ex[k]));
    }
    const rungs = el('table', { id: 'explain-rungs' },
      el('thead', {}, el('tr', {}, ...['Deployment', 'Provider', 'Kept', 'Reason', 'Detail', 'Health'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...(ex.rungs || []).map((g) => el('tr', { class: g.kept ? '' : 'warn', 'data-deployment': g.deployment, 'data-kept': g.kept },
        el('th', { scope: 'row' }, g.deployment), el('td', {}, g.provider), el('td', {}, g.kept ? 'yes' : 'no'),
        el('td', {}, g.reason || ''), el('td', {}, g.detail || ''), el('td', {}, g.health || '')))));
    out.replaceChildren(facts, rungs, el('details', {}, el('summary', {}, 'The whole answer (JSON)'), el('pre', {}, JSON.stringify(ex, null, 2))));
  }

  // Rounds ----------------------------------------------------------

  // changed reports whether a panel's answer differs from the one it
  // shows: an unchanged panel is not rebuilt, so a button or a selection
  // in it survives the poll.
  const shown = {};
  function changed(panel, r) {
    const k = r.status + ' ' + JSON.stringify(r.body);
    if (shown[panel] === k) return false;
    shown[panel] = k;
    return true;
  }

  async function refresh() {
    round++;
    const calls = [
      api('/v1/admin/health').then((r) => { if (settle('health', r) && changed('health', r)) renderHealth(r.body); return r; }),
      api('/v1/admin/traffic').then((r) => { if (settle('traffic', r)) renderTraffic(r.body); return r; }),
      api('/v1/admin/quality').then((r) => { if (changed('quality', r)) renderQuality(r); return r; }),
      api('/v1/admin/failures?limit=100').then((r) => { if (settle('failures', r) && changed('failures', r)) renderFailures(r.body); return r; }),
    ];
    if (round === 1 || round % usageEvery === 0 || $('#usage').dataset.state !== 'ok') {
      calls.push(api('/v1/usage?group_by=team,model').then((r) => {
        if (r.status === 404 && errorCode(r) !== 'admin_disabled') {
          r = { status: 404, body: { error: { message: 'this gateway keeps no ledger store, so it has no usage to show.' } } };
        }
        if (settle('usage', r)) renderUsage(r.body);
        return r;
      }));
    }
    const results = await Promise.all(calls);
    const status = $('#status');
    const unauthorized = results.some((r) => r.status === 401);
    if (unauthorized && adminKey()) {
      // The key was refused: forget it and ask again.
      sessionStorage.removeItem(KEY);
      signedIn(false);
      status.textContent = 'The gateway refused this admin key (401). Sign in with the gateway\'s admin key.';
      status.classList.add('bad');
      return;
    }
    if (unauthorized) {
      status.textContent = 'Not signed in: the gateway answers 401 to every data call without the admin key. Sign in to see the panels.';
      status.classList.add('bad');
      return;
    }
    const down = results.find((r) => r.status === 0 || errorCode(r) === 'admin_disabled');
    status.textContent = down ? describe(down) : 'Signed in. Updated ' + fmtTime(new Date()) + '; refreshing every ' + refreshMs / 1000 + ' s.';
    status.classList.toggle('bad', !!down);
  }

  function signedIn(yes) {
    $('#login').hidden = yes;
    $('#session').hidden = !yes;
    clearInterval(timer);
    timer = yes ? setInterval(refresh, refreshMs) : null;
  }

  $('#login').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('#admin-key');
    const k = input.value.trim();
    input.value = '';
    if (!k) return;
    sessionStorage.setItem(KEY, k);
    signedIn(true);
    $('#status').textContent = 'Signing in…';
    $('#status').classList.remove('bad');
    refresh();
  });
  $('#logout').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    signedIn(false);
    round = 0;
    refresh();
  });
  $('#explain-form').addEventListener('submit', explain);
  // Clearing a divergence alert (and, with eject, making the deployment
  // eligible again) is the one thing this page changes.
  $('#quality-body').addEventListener('click', async (ev) => {
    const b = ev.target.closest('button.clear');
    if (!b) return;
    b.disabled = true;
    const r = await api('/v1/admin/quality/clear', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ pool: b.dataset.pool, deployment: b.dataset.deployment }),
    });
    const out = $('#quality-action');
    out.textContent = r.status === 200 ?
      'Cleared ' + fmtInt(r.body && r.body.cleared) + ' alert(s) of ' + b.dataset.deployment + ' in pool ' + b.dataset.pool + '.' :
      'Clearing ' + b.dataset.deployment + ' in pool ' + b.dataset.pool + ': ' + describe(r);
    out.classList.toggle('bad', r.status !== 200);
    refresh();
  });

  signedIn(!!adminKey());
  refresh();
})();
