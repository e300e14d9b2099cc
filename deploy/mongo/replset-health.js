// Health check of the demo's MongoDB container (docker-compose.yml), run every few seconds
// with mongosh against the local mongod. It initiates the one-member replica set the first
// time (and only then: NotYetInitialized is the one error it acts on), then reports healthy
// once this member is a writable primary, which is what denormd's change streams and
// w:"majority" writes need. Running it again on an initiated set changes nothing.
// Exit codes: 0 healthy, 1 not (yet) healthy; Docker retries.
const replSet = process.env.DEMO_REPLSET || 'rs0';
const memberHost = process.env.DEMO_MEMBER_HOST || 'mongo:27017';

let initiated = true;
try {
  rs.status();
} catch (e) {
  if (e.codeName !== 'NotYetInitialized' && e.code !== 94) {
    print(`replica set status failed: ${e.message}`);
    quit(1);
  }
  initiated = false;
}
if (!initiated) {
  const res = rs.initiate({ _id: replSet, members: [{ _id: 0, host: memberHost }] });
  print(`rs.initiate(${replSet}, ${memberHost}): ${JSON.stringify(res)}`);
}
const hello = db.hello();
if (!hello.isWritablePrimary) {
  print(`waiting for ${memberHost} to become primary of ${hello.setName || replSet}`);
  quit(1);
}
quit(0);
