// Sends numbered events to a glyd sink with @fluent-org/logger and prints how many were
// acknowledged. Usage: node fluent_send.js PORT MODE COUNT [SHARED_KEY]
// MODE: Message, Forward, PackedForward or CompressedPackedForward (acks on in every mode).
const { FluentClient } = require("@fluent-org/logger");

async function main() {
  const [port, mode, count, sharedKey] = process.argv.slice(2);
  const options = {
    socket: { host: "127.0.0.1", port: Number(port), timeout: 10000 },
    eventMode: mode,
    ack: { ackTimeout: 20000 },
    flushInterval: 10,
  };
  if (sharedKey) {
    options.security = { clientHostname: "test-client", sharedKey };
  }
  const logger = new FluentClient("node", options);
  const sends = [];
  for (let i = 0; i < Number(count); i++) {
    sends.push(logger.emit(mode.toLowerCase(), { n: i, mode, level: i % 10 === 0 ? "ERROR" : "INFO", msg: `event ${i} of ${mode}` }));
  }
  await Promise.all(sends);
  await logger.disconnect();
  console.log(`acknowledged ${count}`);
}

main().catch((e) => {
  console.error(`fluent_send: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
