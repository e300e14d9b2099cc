// Node driver smoke test against mongo-emulator: handshake, CRUD, a change stream resumed
// after the server closes a getMore's connection. Run by node_smoke.sh.
'use strict';
const { MongoClient } = require('mongodb');

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
}

async function nextEvents(stream, n, timeoutMs) {
  const events = [];
  const deadline = Date.now() + timeoutMs;
  while (events.length < n && Date.now() < deadline) {
    const e = await stream.tryNext();
    if (e) events.push(e);
  }
  return events;
}

async function main() {
  const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
  await client.connect();
  try {
    const db = client.db('node_smoke');
    await db.dropDatabase();
    const c = db.collection('c');
    await c.insertMany([{ _id: 1, a: 1 }, { _id: 2, a: 2 }]);
    const r = await c.updateOne({ _id: 1 }, { $set: { b: true } });
    check(r.matchedCount === 1 && r.modifiedCount === 1, 'updateOne');
    check((await c.countDocuments({ a: { $gte: 1 } })) === 2, 'countDocuments');
    const docs = await c.find({}, { sort: { _id: -1 }, projection: { a: 1 } }).toArray();
    check(docs.length === 2 && docs[0]._id === 2, 'find');

    const stream = c.watch([], { maxAwaitTimeMS: 100 });
    await stream.tryNext();  // opens the cursor
    await c.insertOne({ _id: 3 });
    const first = await nextEvents(stream, 1, 5000);
    await client.db('admin').command({
      configureFailPoint: 'failCommand', mode: { times: 1 },
      data: { failCommands: ['getMore'], closeConnection: true },
    });
    await c.insertMany([{ _id: 4 }, { _id: 5 }]);
    const more = await nextEvents(stream, 2, 5000);
    const ids = first.concat(more).map((e) => e.documentKey._id);
    check(JSON.stringify(ids) === '[3,4,5]', 'events exactly once: ' + JSON.stringify(ids));
    await stream.close();
    await db.dropDatabase();
    console.log('node driver ' + require('mongodb/package.json').version + ': OK');
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
