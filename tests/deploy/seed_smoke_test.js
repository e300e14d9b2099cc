#!/usr/bin/env node
// Runs deploy/seed/seed.js under Node with an in-memory stand-in for mongosh's `db`, so a
// typo or a runtime error in the demo seeder fails CI without a MongoDB server. Checks the
// initial load (sizes, the application-written snapshots), that every change action runs,
// that changes are real (documents change), that a second run skips the load, and that
// the data fits the sample mappings in mappings/ (fields present, keys pointing at parents).
// Usage: node seed_smoke_test.js [path/to/seed.js]
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const assert = require('assert');

const seedPath = process.argv[2] || path.join(__dirname, '..', '..', 'deploy', 'seed', 'seed.js');
const code = fs.readFileSync(seedPath, 'utf8');

let oidCounter = 0;
class ObjectId {
  constructor() { this.hex = (++oidCounter).toString(16).padStart(24, '0'); }
  toString() { return this.hex; }
}
// Objects made inside the vm context have that context's prototypes: compare as JSON.
const eq = (a, b, msg) => assert.strictEqual(JSON.stringify(a), JSON.stringify(b), msg);
const same = (a, b) => (a instanceof ObjectId && b instanceof ObjectId ? a.hex === b.hex : a === b);
const get = (doc, p) => p.split('.').reduce((v, k) => (v == null ? undefined : v[k]), doc);
function matches(doc, filter) {
  return Object.entries(filter).every(([k, cond]) => {
    const v = get(doc, k);
    if (cond && typeof cond === 'object' && !(cond instanceof ObjectId)) {
      if ('$in' in cond) return cond.$in.some((x) => same(x, v));
      throw new Error(`mock: unsupported condition ${JSON.stringify(cond)}`);
    }
    return same(v, cond);
  });
}
function setPath(doc, p, value) {
  const parts = p.split('.');
  let d = doc;
  for (const k of parts.slice(0, -1)) d = d[k] = d[k] || {};
  d[parts[parts.length - 1]] = value;
}

class Collection {
  constructor(name) { this.name = name; this.docs = []; this.ops = 0; }
  estimatedDocumentCount() { return this.docs.length; }
  insertOne(d) { this.ops++; this.docs.push(d); return { acknowledged: true }; }
  insertMany(ds, opts) {
    assert(Array.isArray(ds) && ds.length > 0 && ds.length <= 1000, `${this.name}.insertMany batch size ${ds.length}`);
    this.ops++; this.docs.push(...ds); return { acknowledged: true };
  }
  updateOne(filter, update) {
    this.ops++;
    const d = this.docs.find((x) => matches(x, filter));
    if (!d) return { matchedCount: 0 };
    for (const [op, fields] of Object.entries(update)) {
      assert.strictEqual(op, '$set', `mock: unsupported update operator ${op}`);
      for (const [p, v] of Object.entries(fields)) setPath(d, p, v);
    }
    d.__changed = true;
    return { matchedCount: 1 };
  }
  deleteOne(filter) {
    this.ops++;
    const i = this.docs.findIndex((x) => matches(x, filter));
    if (i >= 0) this.docs.splice(i, 1);
    return { deletedCount: i >= 0 ? 1 : 0 };
  }
  find(filter = {}) {
    const docs = this.docs.filter((x) => matches(x, filter));
    return { toArray: () => docs };
  }
  aggregate(pipeline) {
    let docs = this.docs;
    for (const stage of pipeline) {
      if (stage.$match) docs = docs.filter((x) => matches(x, stage.$match));
      else if (stage.$sample) docs = docs.length ? [docs[Math.floor(Math.random() * docs.length)]] : [];
      else if (stage.$project) docs = docs.map((x) => x);
      else throw new Error(`mock: unsupported stage ${JSON.stringify(stage)}`);
    }
    return { toArray: () => docs };
  }
}

function run(state, env) {
  const collections = state || {};
  const commands = (collections.__commands = collections.__commands || []);
  const runCommand = (cmd) => { commands.push(cmd); return { ok: 1 }; };
  const db = new Proxy({}, {
    get: (_, name) => (name === 'runCommand' ? runCommand
                                             : (collections[name] = collections[name] || new Collection(name))),
  });
  const output = [];
  class Quit extends Error {}
  const context = {
    db, ObjectId, print: (...a) => output.push(a.join(' ')), sleep: () => {},
    quit: () => { throw new Quit(); }, process: { env }, Date, Math, JSON, Number, String, Array, Object, Error,
  };
  try {
    vm.runInNewContext(code, context, { filename: seedPath, timeout: 60000 });
  } catch (e) {
    if (!(e instanceof Quit) && e.constructor.name !== 'Quit') throw e;
  }
  return { collections, output };
}

// 1. fresh shop, load only
const small = { SEED_CUSTOMERS: '20', SEED_PRODUCTS: '8', SEED_ORDERS: '50', SEED_HOSTS: '3',
  SEED_LOGMSGS: '120', SEED_REVIEWS: '30' };
let { collections: c, output } = run(null, { ...small, SEED_CHANGE_MINUTES: '0' });
assert.strictEqual(c.customers.docs.length, 20);
assert.strictEqual(c.products.docs.length, 8);
assert.strictEqual(c.orders.docs.length, 50);
assert.strictEqual(c.hosts.docs.length, 3);
assert.strictEqual(c.logmsgs.docs.length, 120);
assert.strictEqual(c.reviews.docs.length, 30);
for (const o of c.orders.docs) {
  const cust = c.customers.docs.find((x) => same(x._id, o.customerId));
  assert(cust, 'order references a customer');
  eq(o.customer, { name: cust.name, email: cust.email, city: cust.address.city }, 'customer snapshot');
  assert(o.items.length >= 1);
  for (const it of o.items) {
    const p = c.products.docs.find((x) => same(x._id, it.productId));
    assert(p, 'item references a product');
    eq(it.product, { title: p.title, sku: p.sku }, 'product snapshot');
    assert.strictEqual(typeof it.priceAtOrder, 'number');
  }
  assert(['PENDING', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED'].includes(o.status));
}
for (const l of c.logmsgs.docs) {
  const h = c.hosts.docs.find((x) => same(x._id, l.hostId));
  eq(l.host, { name: h.name, ipaddr: h.ipaddr, label: `${h.name} (${h.ipaddr})` }, 'host copy');
}
for (const r of c.reviews.docs) assert(c.products.docs.some((p) => same(p._id, r.productId)));
for (const parent of [...c.products.docs, ...c.hosts.docs, ...c.customers.docs]) {
  assert(!('recentReviews' in parent || 'recentLogs' in parent || 'recentOrders' in parent),
    'recent arrays are denormd\'s job, not the seeder\'s');
}
assert(output.some((l) => l.includes('seed: loaded')), output.join('\n'));

// The demo data must fit the sample mappings: every mapping's source collection is
// seeded and holds the fields it copies, and its keys point at real documents.
const mappingsDir = path.join(__dirname, '..', '..', 'mappings');
let mappingsChecked = 0;
for (const file of fs.readdirSync(mappingsDir).filter((f) => f.endsWith('.json')).sort()) {
  const m = JSON.parse(fs.readFileSync(path.join(mappingsDir, file), 'utf8'));
  const where = `mappings/${file}`;
  const src = c[m.source.collection];
  const tgt = c[m.target.collection];
  assert(src && src.docs.length > 0, `${where}: the seeder writes no ${m.source.collection}`);
  assert(tgt && tgt.docs.length > 0, `${where}: the seeder writes no ${m.target.collection}`);
  for (const [name, spec] of Object.entries(m.fields)) {
    // aggregate: {"$sum": "path"} reads a path, {"$count": {}} none
    const srcPath = typeof spec === 'string' ? spec : Object.values(spec)[0];
    if (typeof srcPath !== 'string') continue;
    assert(src.docs.every((d) => get(d, srcPath) !== undefined),
      `${where}: field ${name} copies ${srcPath}, which seeded ${m.source.collection} lack`);
  }
  if (m.kind === 'copy') {
    const sourceKey = m.source.key || '_id';
    const keys = (m.target.array ? tgt.docs.flatMap((d) => d[m.target.array] || []) : tgt.docs)
      .map((d) => get(d, m.target.key));
    assert(keys.length > 0 && keys.every((k) => src.docs.some((d) => same(get(d, sourceKey), k))),
      `${where}: ${m.target.collection}.${m.target.array ? m.target.array + '.' : ''}${m.target.key} does not reference ${m.source.collection}.${sourceKey}`);
  } else {
    const parentKey = m.target.key || '_id';
    assert(src.docs.every((d) => tgt.docs.some((p) => same(get(p, parentKey), get(d, m.source.parentKey)))),
      `${where}: ${m.source.collection}.${m.source.parentKey} does not reference ${m.target.collection}.${parentKey}`);
  }
  if (m.kind === 'aggregate') {
    assert(c.__commands.some((cmd) => cmd.collMod === m.source.collection && cmd.changeStreamPreAndPostImages.enabled),
      `${where}: the seeder does not enable pre-images on ${m.source.collection}`);
  }
  mappingsChecked++;
}
assert(mappingsChecked >= 8, `expected the eight sample mappings in ${mappingsDir}, found ${mappingsChecked}`);

// 2. the same shop again, with half a second of changes
const before = { orders: c.orders.docs.length, reviews: c.reviews.docs.length, logmsgs: c.logmsgs.docs.length };
({ collections: c, output } = run(c, { ...small, SEED_CHANGE_MINUTES: '0.008', SEED_CHANGES_PER_SECOND: '1000' }));
assert(output.some((l) => l.includes('skipping the initial load')), output.join('\n'));
const done = output.find((l) => l.startsWith('seed: done'));
assert(done, output.join('\n'));
const counts = JSON.parse(done.slice('seed: done '.length));
for (const action of ['renameCustomer', 'retitleProduct', 'moveHost', 'writeLogs', 'placeOrder', 'advanceOrder',
  'writeReview', 'moderateReview', 'deleteOrder']) {
  assert(counts[action] > 0, `action ${action} never ran: ${done}`);
}
assert(!output.some((l) => l.includes('failed')), output.join('\n'));
assert(c.customers.docs.some((x) => x.__changed) && c.products.docs.some((x) => x.__changed) &&
       c.hosts.docs.some((x) => x.__changed), 'parents changed');
assert(c.logmsgs.docs.length > before.logmsgs && c.reviews.docs.length > before.reviews, 'children inserted');
assert(c.reviews.docs.some((r) => r.hidden === true), 'a review was hidden');
console.log(`seed smoke test: ${Object.values(counts).reduce((a, b) => a + b, 0)} changes over ` +
            `${Object.keys(counts).length} actions`);
console.log(`seed data fits ${mappingsChecked} sample mappings`);
console.log('1 passed, 0 failed');
