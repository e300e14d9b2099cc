// Demo data for denormd (docker-compose.yml's `seed` service):
//   mongosh "mongodb://mongo:27017/shop?replicaSet=rs0" /seed/seed.js
//
// 1. Loads a small but real shop, written the way an application writes it: every order
//    carries a snapshot of its customer and of each item's product, every log line a copy of
//    its host. The bounded "recent" arrays (products.recentReviews, hosts.recentLogs,
//    customers.recentOrders) are not written here: denormd keeps them, from the inserts it
//    sees on the change streams. The load is skipped when the shop already has customers,
//    so restarting the service does not duplicate anything.
// 2. Keeps changing things for SEED_CHANGE_MINUTES (default 30; 0 = load only) at about
//    SEED_CHANGES_PER_SECOND (default 5) so the Grafana dashboard moves: renames customers
//    and products, moves hosts to new addresses, places and ships orders, writes reviews
//    and log lines, hides and deletes some of them.
// The data is generated from a fixed seed (SEED_RANDOM, default 42), so every fresh stack
// starts from the same shop.
'use strict';

const env = (typeof process !== 'undefined' && process.env) || {};
const numberFromEnv = (name, dflt) => {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${v}"`);
  return n;
};
const CHANGE_MINUTES = numberFromEnv('SEED_CHANGE_MINUTES', 30);
const CHANGES_PER_SECOND = Math.max(numberFromEnv('SEED_CHANGES_PER_SECOND', 5), 0.1);
const SIZE = {
  customers: numberFromEnv('SEED_CUSTOMERS', 200),
  products: numberFromEnv('SEED_PRODUCTS', 60),
  orders: numberFromEnv('SEED_ORDERS', 1000),
  hosts: numberFromEnv('SEED_HOSTS', 12),
  logmsgs: numberFromEnv('SEED_LOGMSGS', 3000),
  reviews: numberFromEnv('SEED_REVIEWS', 400),
};

// mulberry32: small, fast, good enough for demo data.
let state = numberFromEnv('SEED_RANDOM', 42) >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const money = (lo, hi) => Math.round((lo + random() * (hi - lo)) * 100) / 100;
const minutesAgo = (m) => new Date(Date.now() - m * 60000);

const FIRST = ['Ada', 'Alan', 'Grace', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Margaret',
  'Dennis', 'Radia', 'John', 'Leslie', 'Katherine', 'Niklaus', 'Sophie', 'Tim', 'Hedy', 'Linus', 'Joan'];
const LAST = ['Lovelace', 'Turing', 'Hopper', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson',
  'Hamilton', 'Ritchie', 'Perlman', 'Backus', 'Lamport', 'Johnson', 'Wirth', 'Wilson', 'Berners-Lee',
  'Lamarr', 'Torvalds', 'Clarke'];
const CITIES = [['Lyon', 'FR'], ['Porto', 'PT'], ['Leipzig', 'DE'], ['Bologna', 'IT'], ['Ghent', 'BE'],
  ['Utrecht', 'NL'], ['Krakow', 'PL'], ['Brno', 'CZ'], ['Tampere', 'FI'], ['Aarhus', 'DK'],
  ['Seville', 'ES'], ['Graz', 'AT']];
const STREETS = ['Mill Lane', 'Station Road', 'Church Street', 'Harbour Row', 'Elm Grove', 'Canal Walk'];
const ADJ = ['Compact', 'Rugged', 'Silent', 'Wireless', 'Ergonomic', 'Modular', 'Solar', 'Folding',
  'Classic', 'Pocket'];
const NOUN = ['Kettle', 'Headphones', 'Lamp', 'Backpack', 'Keyboard', 'Thermos', 'Tent', 'Drill',
  'Speaker', 'Notebook', 'Bicycle Bell', 'Chair'];
const CATEGORIES = ['kitchen', 'audio', 'outdoor', 'office', 'tools', 'home'];
const LEVELS = ['DEBUG', 'INFO', 'INFO', 'INFO', 'WARN', 'ERROR'];
const LOG_TEXT = ['request served', 'cache miss', 'connection reset by peer', 'slow query',
  'disk usage above 80%', 'user logged in', 'job finished', 'retrying upstream', 'config reloaded',
  'certificate expires in 20 days'];
const REVIEW_TEXT = ['Does exactly what it says.', 'Sturdy and well made, would buy again.',
  'Arrived late but works fine.', 'Not worth the price.', 'Surprisingly good for the size.',
  'Broke after two weeks.', 'My favourite purchase this year.', 'Instructions were confusing.'];
const OPEN = ['PENDING', 'PAID', 'SHIPPED'];

const ipaddr = () => `10.${int(0, 255)}.${int(0, 255)}.${int(1, 254)}`;
const personName = () => `${pick(FIRST)} ${pick(LAST)}`;
const email = (name, n) => `${name.toLowerCase().replace(/[^a-z]+/g, '.')}.${n}@example.org`;

function newCustomer(i) {
  const name = personName();
  const [city, country] = pick(CITIES);
  return { _id: new ObjectId(), name, email: email(name, i),
    address: { street: `${int(1, 99)} ${pick(STREETS)}`, city, country },
    createdAt: minutesAgo(int(60 * 24 * 30, 60 * 24 * 400)) };
}
function newProduct(i) {
  return { _id: new ObjectId(), title: `${pick(ADJ)} ${pick(NOUN)}`,
    sku: `SKU-${String(10000 + i).padStart(6, '0')}`, category: pick(CATEGORIES),
    price: money(4, 400), createdAt: minutesAgo(int(60 * 24 * 30, 60 * 24 * 400)) };
}
function newOrder(customer, products, createdAt, status) {
  const items = [];
  const n = int(1, 4);
  for (let k = 0; k < n; k++) {
    const p = pick(products);
    items.push({ productId: p._id, qty: int(1, 3), priceAtOrder: p.price,
      product: { title: p.title, sku: p.sku } });
  }
  const total = Math.round(items.reduce((s, it) => s + it.qty * it.priceAtOrder, 0) * 100) / 100;
  return { _id: new ObjectId(), customerId: customer._id, status, createdAt, total, items,
    customer: { name: customer.name, email: customer.email, city: customer.address.city } };
}
function newLogmsg(host, time) {
  return { _id: new ObjectId(), hostId: host._id, time, level: pick(LEVELS),
    message: `${pick(LOG_TEXT)} (${int(1, 9999)})`,
    host: { name: host.name, ipaddr: host.ipaddr, label: `${host.name} (${host.ipaddr})` } };
}
function newReview(product, createdAt) {
  return { _id: new ObjectId(), productId: product._id, stars: int(1, 5), text: pick(REVIEW_TEXT),
    createdAt, hidden: false };
}
function insertInBatches(coll, docs) {
  for (let i = 0; i < docs.length; i += 500) coll.insertMany(docs.slice(i, i + 500), { ordered: false });
}

// ---- 1. initial load ------------------------------------------------------------------------
let customers, products, hosts;
if (db.customers.estimatedDocumentCount() > 0) {
  print('seed: the shop already has data, skipping the initial load');
  customers = db.customers.find({}, { name: 1, email: 1, address: 1 }).toArray();
  products = db.products.find({}, { title: 1, sku: 1, price: 1 }).toArray();
  hosts = db.hosts.find({}, { name: 1, ipaddr: 1 }).toArray();
} else {
  customers = Array.from({ length: SIZE.customers }, (_, i) => newCustomer(i));
  products = Array.from({ length: SIZE.products }, (_, i) => newProduct(i));
  hosts = Array.from({ length: SIZE.hosts }, (_, i) => ({ _id: new ObjectId(),
    name: `web-${String(i + 1).padStart(2, '0')}`, ipaddr: ipaddr(), datacenter: pick(['fra1', 'ams2', 'par3']) }));
  insertInBatches(db.customers, customers);
  insertInBatches(db.products, products);
  insertInBatches(db.hosts, hosts);

  const orders = [];
  for (let i = 0; i < SIZE.orders; i++) {
    const age = int(1, 60 * 24 * 120);
    const status = age > 60 * 24 * 14 ? pick(['DELIVERED', 'DELIVERED', 'DELIVERED', 'CANCELLED'])
                                      : pick(OPEN);
    orders.push(newOrder(pick(customers), products, minutesAgo(age), status));
  }
  orders.sort((a, b) => a.createdAt - b.createdAt);
  insertInBatches(db.orders, orders);

  const reviews = [];
  for (let i = 0; i < SIZE.reviews; i++) reviews.push(newReview(pick(products), minutesAgo(int(1, 60 * 24 * 90))));
  reviews.sort((a, b) => a.createdAt - b.createdAt);
  insertInBatches(db.reviews, reviews);

  const logs = [];
  for (let i = 0; i < SIZE.logmsgs; i++) logs.push(newLogmsg(pick(hosts), minutesAgo(int(1, 60 * 24))));
  logs.sort((a, b) => a.time - b.time);
  insertInBatches(db.logmsgs, logs);

  print(`seed: loaded ${customers.length} customers, ${products.length} products, ${orders.length} orders, ` +
        `${hosts.length} hosts, ${logs.length} logmsgs, ${reviews.length} reviews`);
}
// The aggregate samples (products-rating, customers-spent) read the parent a deleted or moved
// child left from its pre-image: keep pre-images of their sources.
for (const name of ['reviews', 'orders']) {
  db.runCommand({ collMod: name, changeStreamPreAndPostImages: { enabled: true } });
}
if (!customers.length || !products.length || !hosts.length) {
  print('seed: nothing to change (empty shop); done');
  quit(0);
}

// ---- 2. keep changing things --------------------------------------------------------------
// Each action is what an application would do; the comment says which mapping reacts.
const actions = [
  // orders-customer: open orders' customer copy follows (delivered/cancelled keep theirs)
  [3, function renameCustomer() {
    const c = pick(customers);
    const name = personName();
    const [city] = pick(CITIES);
    db.customers.updateOne({ _id: c._id }, { $set: { name, email: email(name, int(1000, 9999)), 'address.city': city } });
  }],
  // orders-items-product: every item with this productId, priceAtOrder untouched
  [2, function retitleProduct() {
    const p = pick(products);
    db.products.updateOne({ _id: p._id }, { $set: { title: `${pick(ADJ)} ${pick(NOUN)}` } });
  }],
  // logmsgs-host: one host, hundreds of log lines
  [1, function moveHost() {
    const h = pick(hosts);
    db.hosts.updateOne({ _id: h._id }, { $set: { ipaddr: ipaddr() } });
  }],
  // hosts-recent-logs: the last 100 lines per host
  [8, function writeLogs() {
    const h = pick(hosts);
    const docs = Array.from({ length: int(1, 20) }, () => newLogmsg(h, new Date()));
    db.logmsgs.insertMany(docs, { ordered: false });
  }],
  // customers-recent-orders (+ orders-customer with fillNewTargets): a new order
  [4, function placeOrder() {
    const c = pick(customers);
    // The application's customer snapshot may be stale: denormd's fillNewTargets fixes it.
    db.orders.insertOne(newOrder(c, products, new Date(), 'PENDING'));
  }],
  // customers-recent-orders: status copies follow; orders-customer stops at DELIVERED
  [4, function advanceOrder() {
    const o = db.orders.aggregate([{ $match: { status: { $in: OPEN } } }, { $sample: { size: 1 } },
      { $project: { status: 1 } }]).toArray()[0];
    if (!o) return;
    const next = { PENDING: random() < 0.1 ? 'CANCELLED' : 'PAID', PAID: 'SHIPPED', SHIPPED: 'DELIVERED' }[o.status];
    db.orders.updateOne({ _id: o._id, status: o.status }, { $set: { status: next } });
  }],
  // products-recent-reviews: the 10 newest visible reviews
  [4, function writeReview() {
    db.reviews.insertOne(newReview(pick(products), new Date()));
  }],
  // products-recent-reviews: a hidden review leaves the array (filter), a deleted one too,
  // and the next newest takes its place (pullAndRefill)
  [1, function moderateReview() {
    const r = db.reviews.aggregate([{ $match: { hidden: false } }, { $sample: { size: 1 } }]).toArray()[0];
    if (!r) return;
    if (random() < 0.5) db.reviews.updateOne({ _id: r._id }, { $set: { hidden: true } });
    else db.reviews.deleteOne({ _id: r._id });
  }],
  // customers-recent-orders: a deleted order leaves the array and the next one refills it
  [0.5, function deleteOrder() {
    const o = db.orders.aggregate([{ $match: { status: 'CANCELLED' } }, { $sample: { size: 1 } }]).toArray()[0];
    if (o) db.orders.deleteOne({ _id: o._id });
  }],
];
const totalWeight = actions.reduce((s, [w]) => s + w, 0);
function pickAction() {
  let r = random() * totalWeight;
  for (const [w, f] of actions) {
    if ((r -= w) < 0) return f;
  }
  return actions[actions.length - 1][1];
}

const endAt = Date.now() + CHANGE_MINUTES * 60000;
const pause = Math.round(1000 / CHANGES_PER_SECOND);
const counts = {};
let lastReport = Date.now();
if (CHANGE_MINUTES > 0) {
  print(`seed: changing the shop for ${CHANGE_MINUTES} minutes at ~${CHANGES_PER_SECOND}/s`);
}
while (Date.now() < endAt) {
  const f = pickAction();
  try {
    f();
    counts[f.name] = (counts[f.name] || 0) + 1;
  } catch (e) {
    // A step-down or a restart of mongod must not end the demo: report and go on.
    print(`seed: ${f.name} failed: ${e.message}`);
    sleep(1000);
  }
  if (Date.now() - lastReport >= 60000) {
    print(`seed: changes so far ${JSON.stringify(counts)}`);
    lastReport = Date.now();
  }
  sleep(pause);
}
print(`seed: done ${JSON.stringify(counts)}`);
