// @ts-check
// The inspector page of `schoolhooks listen --ui`: plain DOM, no framework, nothing from afar.
// Every value that came in a request is put in the page as text (textContent), never as HTML:
// a delivery's body is whatever anyone sent.
'use strict';

/**
 * The shapes the server sends, from its own types (src/cli/inspector/page-api.ts).
 * @typedef {import('../page-api.js').DeliverySummary} DeliverySummary
 * @typedef {import('../page-api.js').DeliveryView} DeliveryView
 * @typedef {import('../page-api.js').DeliveryList} DeliveryList
 * @typedef {import('../page-api.js').InspectorInfo} InspectorInfo
 * @typedef {import('../page-api.js').ActionDone} ActionDone
 * @typedef {import('../page-api.js').ActionRefused} ActionRefused
 * @typedef {import('../page-api.js').InspectorHealth} InspectorHealth
 * @typedef {import('../page-api.js').InspectorIssue} Issue
 * @typedef {Array<string | number>} JsonPath
 * @typedef {Map<string, HTMLElement>} JsonNodes where each node of a rendered JSON value is, by path
 * @typedef {Node | string | null | undefined} Child
 */

(() => {
  /** Every request that acts carries this header; the server refuses those without it. */
  const ACTING = { 'content-type': 'application/json', 'x-schoolhooks-inspector': '1' };
  const HASH = '#delivery-';

  /** @type {DeliverySummary[]} newest first */
  let deliveries = [];
  let openId = /** @type {number | null} */ (null);
  let firstReset = true;

  /** An element of index.html, which has every id this script asks for. */
  const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const list = $('list');
  const filterEvent = /** @type {HTMLSelectElement} */ ($('filter-event'));
  const filterOutcome = /** @type {HTMLSelectElement} */ ($('filter-outcome'));

  /**
   * An element with a class and children (strings become text).
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {string | null} className
   * @param {...Child} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  /** @param {string} iso */
  function time(iso) {
    const node = el('time', 'time', new Date(iso).toLocaleTimeString([], { hour12: false }));
    node.dateTime = iso;
    return node;
  }

  /** @param {DeliverySummary} delivery */
  function badge(delivery) {
    return el(
      'span',
      `badge ${delivery.outcomeClass}`,
      `${delivery.status} ${delivery.outcome.replaceAll('_', ' ')}`,
    );
  }

  /** @param {DeliverySummary} delivery */
  function describe(delivery) {
    return `#${delivery.id} ${delivery.event ?? '(no event)'}, ${delivery.status} ${delivery.outcome}`;
  }

  /** @param {unknown} error */
  function messageOf(error) {
    return error instanceof Error ? error.message : String(error);
  }

  // The list

  /** @param {DeliverySummary} delivery */
  function matches(delivery) {
    if (filterEvent.value && delivery.event !== filterEvent.value) return false;
    const outcome = filterOutcome.value;
    if (outcome.startsWith('class:')) return delivery.outcomeClass === outcome.slice(6);
    return !outcome || delivery.outcome === outcome;
  }

  /** @param {DeliverySummary} delivery */
  function row(delivery) {
    const link = el(
      'a',
      `row ${delivery.outcomeClass}`,
      time(delivery.receivedAt),
      el('span', 'event', delivery.event ?? '(no event)'),
      badge(delivery),
      delivery.tenant === undefined ? null : el('span', 'tenant', `tenant ${delivery.tenant}`),
      el('code', 'key', delivery.idempotencyKey ?? '—'),
    );
    link.href = `${HASH}${delivery.id}`;
    const tenant = delivery.tenant === undefined ? '' : `, tenant ${delivery.tenant}`;
    link.setAttribute(
      'aria-label',
      `${describe(delivery)}, key ${delivery.idempotencyKey ?? 'none'}${tenant}`,
    );
    if (delivery.id === openId) link.setAttribute('aria-current', 'true');
    const item = el('li', null, link);
    item.dataset.id = String(delivery.id);
    return item;
  }

  /**
   * Keep a select's options in step with the values seen, keeping what is selected.
   * @param {HTMLElement} parent a select or one of its optgroups
   * @param {Set<string>} values
   */
  function syncOptions(parent, values) {
    const have = new Set([...parent.querySelectorAll('option')].map((option) => option.value));
    for (const value of [...values].sort()) {
      if (have.has(value)) continue;
      const option = el('option', null, value.replaceAll('_', ' '));
      option.value = value;
      parent.append(option);
    }
  }

  function renderList() {
    syncOptions(filterEvent, new Set(deliveries.flatMap((d) => (d.event ? [d.event] : []))));
    syncOptions($('filter-outcomes'), new Set(deliveries.map((d) => d.outcome)));
    const shown = deliveries.filter(matches);
    list.replaceChildren(...shown.map(row));
    $('empty').hidden = deliveries.length > 0;
    $('count').textContent =
      deliveries.length === 0
        ? ''
        : `${shown.length} of ${deliveries.length} shown (the last ${keep} are kept)`;
  }

  let keep = 500;

  /** @param {string} text */
  function announce(text) {
    // Replaced, not appended: a screen reader reads the new text once.
    $('announcer').textContent = text;
  }

  // Live updates: the whole list on (re)connect, then one event per delivery.

  function connect() {
    const stream = new EventSource('api/stream');
    const status = $('connection');
    stream.addEventListener('open', () => {
      status.textContent = 'Live';
      status.className = 'connection live';
    });
    stream.addEventListener('error', () => {
      status.textContent = 'Reconnecting…';
      status.className = 'connection lost';
    });
    stream.addEventListener('reset', (message) => {
      /** @type {DeliveryList} */
      const data = JSON.parse(message.data);
      keep = data.keep;
      deliveries = data.deliveries;
      renderList();
      void refreshHealth();
      if (firstReset) {
        firstReset = false;
        route(false);
      }
    });
    stream.addEventListener('delivery', (message) => {
      /** @type {DeliverySummary} */
      const delivery = JSON.parse(message.data);
      deliveries.unshift(delivery);
      if (deliveries.length > keep) deliveries.length = keep;
      renderList();
      announce(`New delivery ${describe(delivery)}`);
      void refreshHealth();
    });
    stream.addEventListener('update', (message) => {
      /** @type {DeliverySummary} */
      const delivery = JSON.parse(message.data);
      deliveries = deliveries.map((d) => (d.id === delivery.id ? delivery : d));
      renderList();
      if (delivery.id === openId) void open(delivery.id, false);
      void refreshHealth();
    });
  }

  // The health banner: the receiver's watchdog (docs/watchdog.md), read again after each delivery
  // the live stream brings and every few seconds (a delivery at risk stops being one in time).

  const HEALTH_EVERY_MS = 5000;
  /** The latest read wins: an answer that comes after a newer one is dropped. */
  let healthRead = 0;

  async function refreshHealth() {
    const read = ++healthRead;
    const banner = $('health');
    try {
      const answer = await fetch('api/health');
      if (read !== healthRead) return;
      // No watchdog on this receiver: no banner.
      if (answer.status === 404) return void (banner.hidden = true);
      /** @type {InspectorHealth} */
      const health = await answer.json();
      if (read !== healthRead) return;
      banner.replaceChildren(...healthText(health));
      banner.dataset['status'] = health.status;
      banner.className = `health ${health.status}`;
      banner.hidden = false;
    } catch {
      // The connection line already says when the server is gone.
    }
  }

  /** @param {InspectorHealth} health */
  function healthText(health) {
    /** @type {Array<Node | string>} */
    const parts = [el('strong', 'health-status', health.status)];
    if (health.atRisk > 0) {
      parts.push(
        ` · ${health.atRisk} ${health.atRisk === 1 ? 'delivery' : 'deliveries'} at risk: lost once the platform gives up`,
      );
    }
    if (health.disablesAt !== undefined) {
      const at = el(
        'time',
        'time',
        new Date(health.disablesAt).toLocaleString([], { hour12: false }),
      );
      at.dateTime = health.disablesAt;
      parts.push(' · the platform disables the endpoint at ', at, ' without a success before');
    }
    return parts;
  }

  // One delivery

  /**
   * `data.payment.invoice.totalAmount`, `data.items[0].id`
   * @param {JsonPath} path
   */
  function pathText(path) {
    return path
      .map((key, index) =>
        typeof key === 'number' ? `[${key}]` : index === 0 ? String(key) : `.${key}`,
      )
      .join('');
  }

  /** @param {JsonPath} path */
  function pathKey(path) {
    return JSON.stringify(path);
  }

  /**
   * A JSON value as a tree of nodes: objects and arrays fold (<details>), each node knows its
   * path, so an issue can be marked where it is.
   * @param {unknown} value
   * @param {string | null} key its key in its parent object; null at the top and in an array
   * @param {JsonPath} path
   * @param {JsonNodes} nodes
   * @param {boolean} last whether it is the last of its parent's (no comma after it)
   * @returns {HTMLElement}
   */
  function renderJson(value, key, path, nodes, last) {
    const label = key === null ? null : el('span', 'json-key', `${JSON.stringify(key)}: `);
    const comma = last ? '' : ',';
    if (value !== null && typeof value === 'object') {
      const isArray = Array.isArray(value);
      /** @type {Array<[string | number, unknown]>} */
      const entries = isArray ? value.map((v, i) => [i, v]) : Object.entries(value);
      const [open, close] = isArray ? ['[', ']'] : ['{', '}'];
      if (entries.length === 0) {
        const leaf = el('div', 'json-leaf', label, `${open}${close}${comma}`);
        nodes.set(pathKey(path), leaf);
        return leaf;
      }
      const count = `${entries.length} ${isArray ? 'item' : 'key'}${entries.length === 1 ? '' : 's'}`;
      const summary = el(
        'summary',
        null,
        label,
        open,
        el('span', 'json-folded', ` … ${count} ${close}${comma}`),
      );
      const children = el('div', 'json-children');
      entries.forEach(([childKey, child], index) => {
        const childPath = [...path, childKey];
        children.append(
          renderJson(
            child,
            isArray ? null : String(childKey),
            childPath,
            nodes,
            index === entries.length - 1,
          ),
        );
      });
      const details = el(
        'details',
        'json-node',
        summary,
        children,
        el('div', 'json-close', `${close}${comma}`),
      );
      details.open = true;
      nodes.set(pathKey(path), details);
      return details;
    }
    const type = value === null ? 'null' : typeof value;
    const leaf = el(
      'div',
      'json-leaf',
      label,
      el('span', `json-${type}`, JSON.stringify(value)),
      comma,
    );
    nodes.set(pathKey(path), leaf);
    return leaf;
  }

  /**
   * Mark each issue at its path, or at the nearest parent that exists (a missing field).
   * @param {Issue[]} issues
   * @param {JsonNodes} nodes
   * @returns {Array<{ issue: Issue, path: JsonPath, node: HTMLElement }>}
   */
  function markIssues(issues, nodes) {
    if (issues.length > 0) {
      // Fold what holds no issue below `data`, so every mark is in sight at once.
      const keep = new Set([pathKey([]), pathKey(['data'])]);
      for (const [key, node] of nodes) {
        if (node instanceof HTMLDetailsElement && !keep.has(key)) node.open = false;
      }
    }
    return issues.map((issue) => {
      const path = ['data', ...issue.path];
      let depth = path.length;
      while (depth > 0 && !nodes.has(pathKey(path.slice(0, depth)))) depth--;
      // The top node always exists: renderJson put it there.
      const node = /** @type {HTMLElement} */ (
        nodes.get(pathKey(path.slice(0, depth))) ?? nodes.get(pathKey([]))
      );
      const missing = depth < path.length;
      const note = el(
        'span',
        'issue-note',
        `⚠ ${missing ? `${pathText(path)} is missing: ` : ''}${issue.message}`,
      );
      node.classList.add('has-issue');
      node.dataset.issue = pathText(path);
      const anchor = (node instanceof HTMLDetailsElement && node.querySelector('summary')) || node;
      anchor.append(note);
      // Unfold every parent, so the mark is in sight.
      for (let parent = node.parentElement; parent; parent = parent.parentElement) {
        if (parent instanceof HTMLDetailsElement) parent.open = true;
      }
      node.tabIndex = -1;
      return { issue, path, node };
    });
  }

  /**
   * A panel of the open delivery, labelled by its heading.
   * @param {string} title
   * @param {...Child} children
   */
  function section(title, ...children) {
    const id = `section-${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
    const heading = el('h3', null, title);
    heading.id = id;
    const node = el('section', 'panel', heading, ...children);
    node.setAttribute('aria-labelledby', id);
    return node;
  }

  /**
   * A plain button (never a form's submit).
   * @param {string} text
   * @param {() => unknown} onClick
   * @param {boolean} [disabled]
   */
  function button(text, onClick, disabled) {
    const node = el('button', null, text);
    node.type = 'button';
    node.disabled = Boolean(disabled);
    node.addEventListener('click', onClick);
    return node;
  }

  /** @param {DeliverySummary} delivery */
  function deliveryLink(delivery) {
    const link = el('a', null, describe(delivery));
    link.href = `${HASH}${delivery.id}`;
    return link;
  }

  /**
   * POST to an endpoint that acts; its answer, or an Error with the server's error code.
   * @param {string} url
   * @param {Record<string, unknown>} [body]
   * @returns {Promise<ActionDone>}
   */
  async function act(url, body) {
    const response = await fetch(url, {
      method: 'POST',
      headers: ACTING,
      body: JSON.stringify(body ?? {}),
    });
    /** @type {ActionDone | ActionRefused} */
    const answer = await response.json();
    if (!response.ok || !answer.ok) {
      throw new Error(('error' in answer && answer.error) || `HTTP ${response.status}`);
    }
    return answer;
  }

  /** @param {DeliverySummary} view */
  function sourceText(view) {
    if (view.source === 'replay') return `a replay of #${view.replayOf}, from this page`;
    if (view.source === 'fixture') return 'a fixture sent from this page';
    return 'received over HTTP';
  }

  /**
   * The parts of the open delivery's panel.
   * @param {DeliveryView} view
   * @returns {HTMLElement[]}
   */
  function renderDetail(view) {
    const status = el('p', 'action-status');
    status.setAttribute('role', 'status');
    const curlText = el('pre', 'curl', view.curl);
    const curl = el('details', 'curl-box', el('summary', null, 'curl command'), curlText);

    const replay = button(
      'Replay',
      async () => {
        status.textContent = 'Replaying…';
        try {
          const answer = await act(`api/deliveries/${view.id}/replay`);
          status.replaceChildren(`Replayed as `, deliveryLink(answer.delivery));
        } catch (error) {
          status.textContent = `Replay failed: ${messageOf(error)}`;
        }
      },
      !view.canReplay,
    );
    const copy = button('Copy as curl', async () => {
      try {
        await navigator.clipboard.writeText(view.curl);
        status.textContent =
          'The curl command is on the clipboard: it signs the body with $SCHOOL_WEBHOOK_SECRET.';
      } catch {
        curl.open = true;
        getSelection()?.selectAllChildren(curlText);
        status.textContent = 'Copy the selected command below.';
      }
    });

    const facts = el('dl', 'facts');
    /** @type {(term: string, value: Child) => void} */
    const fact = (term, value) => facts.append(el('dt', null, term), el('dd', null, value));
    fact('Received', `${new Date(view.receivedAt).toLocaleString()} (${view.durationMs} ms)`);
    fact('Answer', badge(view));
    fact('Request', `${view.method} ${view.path}`);
    if (view.tenant !== undefined) fact('Tenant', el('code', null, view.tenant));
    fact('Idempotency key', el('code', null, view.idempotencyKey ?? '—'));
    fact('Source', sourceText(view));

    /** @type {HTMLElement[]} */
    const parts = [facts, el('div', 'actions', replay, copy), status, curl];

    if (view.causes.length > 0) {
      parts.push(
        section(
          'Why the signature failed',
          el('p', null, 'Likely causes:'),
          el('ul', 'causes', ...view.causes.map((cause) => el('li', null, cause))),
        ),
      );
    }

    /** @type {HTMLElement} */
    let body;
    /** @type {ReturnType<typeof markIssues>} */
    let marked = [];
    if (view.body === null) {
      body = el('p', 'hint', 'The receiver did not read the body (it refused the request first).');
    } else {
      let parsed;
      let isJson = true;
      try {
        parsed = JSON.parse(view.body);
      } catch {
        isJson = false;
      }
      if (isJson) {
        /** @type {JsonNodes} */
        const nodes = new Map();
        body = el('div', 'json', renderJson(parsed, null, [], nodes, true));
        marked = markIssues(view.issues, nodes);
      } else {
        body = el('pre', 'raw', view.body);
      }
    }

    if (marked.length > 0) {
      parts.push(
        section(
          'Payload issues',
          el(
            'ol',
            'issues',
            ...marked.map(({ issue, path, node }) => {
              const jump = el('a', 'issue-path', pathText(path));
              jump.href = `#${HASH.slice(1)}${view.id}`;
              jump.addEventListener('click', (event) => {
                event.preventDefault();
                node.scrollIntoView({ block: 'center' });
                node.focus();
              });
              return el('li', null, jump, `: ${issue.message} (${issue.code})`);
            }),
          ),
        ),
      );
    }
    const others = view.errors.filter((error) => error.code !== 'invalid_payload');
    if (others.length > 0) {
      parts.push(
        section(
          'Reported to onError',
          el(
            'ul',
            null,
            ...others.map((error) =>
              el('li', null, el('code', null, error.code), `: ${error.message}`),
            ),
          ),
        ),
      );
    }

    const headers = el('dl', 'headers');
    for (const [name, value] of Object.entries(view.headers)) {
      headers.append(el('dt', null, name), el('dd', null, value));
    }
    parts.push(
      section(
        `Body (${view.bodyBytes} bytes)`,
        view.outcome === 'invalid_signature' && view.body !== null
          ? el(
              'p',
              'hint',
              'The signature did not verify: this is the body as received, unverified.',
            )
          : null,
        body,
      ),
    );
    parts.push(section('Headers', headers));
    return parts;
  }

  /**
   * Open delivery `id` in the detail panel; `focus` moves the focus there (a click, not a reload).
   * @param {number} id
   * @param {boolean} focus
   */
  async function open(id, focus) {
    openId = id;
    for (const link of list.querySelectorAll('a[aria-current]'))
      link.removeAttribute('aria-current');
    list.querySelector(`li[data-id="${id}"] a`)?.setAttribute('aria-current', 'true');
    const title = $('detail-title');
    const target = $('detail-body');
    $('detail-hint').hidden = true;
    const response = await fetch(`api/deliveries/${id}`);
    if (openId !== id) return;
    if (!response.ok) {
      title.textContent = `Delivery #${id}`;
      target.replaceChildren(el('p', 'hint', 'This delivery is no longer kept (see --keep).'));
      return;
    }
    /** @type {DeliveryView} */
    const view = await response.json();
    if (openId !== id) return;
    title.replaceChildren(`#${view.id} ${view.event ?? '(no event)'}`);
    target.replaceChildren(...renderDetail(view));
    if (focus) {
      // Focus moves to the delivery; the page scrolls only when it is out of sight (narrow screens).
      const detail = $('detail');
      detail.focus({ preventScroll: true });
      const { top } = detail.getBoundingClientRect();
      if (top < 0 || top > innerHeight - 80) detail.scrollIntoView();
    }
  }

  /** @param {boolean} focus */
  function route(focus) {
    const { hash } = location;
    if (hash.startsWith(HASH)) void open(Number(hash.slice(HASH.length)), focus);
  }

  // Sending fixtures

  async function setUp() {
    /** @type {InspectorInfo} */
    const info = await (await fetch('api/info')).json();
    const { tenants } = info;
    // With tenants, each has its own path below the receiver's: <path>/<tenant>.
    $('receiver-url').textContent = `${location.origin}${info.receiverPath}${
      tenants === undefined ? '' : `${info.receiverPath.endsWith('/') ? '' : '/'}{tenant}`
    }`;
    const select = $('send-event');
    for (const name of info.fixtures) {
      const option = el('option', null, name);
      option.value = name;
      select.append(option);
    }
    if (tenants !== undefined) {
      const tenantSelect = $('send-tenant');
      for (const name of tenants) {
        const option = el('option', null, name);
        option.value = name;
        tenantSelect.append(option);
      }
      tenantSelect.hidden = false;
    }
  }

  $('send-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const status = $('send-status');
    const name = /** @type {HTMLSelectElement} */ ($('send-event')).value;
    const tenantSelect = /** @type {HTMLSelectElement} */ ($('send-tenant'));
    // Sent to the tenant picked, signed with its secret (on the server), when there are tenants.
    const tenant = tenantSelect.hidden ? {} : { tenant: tenantSelect.value };
    status.textContent = `Sending ${name}…`;
    try {
      const answer = await act('api/send', { event: name, ...tenant });
      status.replaceChildren('Sent as ', deliveryLink(answer.delivery));
    } catch (error) {
      status.textContent = `Sending failed: ${messageOf(error)}`;
    }
  });

  filterEvent.addEventListener('change', renderList);
  filterOutcome.addEventListener('change', renderList);
  addEventListener('hashchange', () => route(true));

  void setUp();
  connect();
  setInterval(() => void refreshHealth(), HEALTH_EVERY_MS);
})();
