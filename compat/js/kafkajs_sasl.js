// kafkajs logging in to a Gregor SASL_PLAINTEXT listener.
//
// Usage: node kafkajs_sasl.js BOOTSTRAP TOPIC_PREFIX
// BOOTSTRAP is a SASL_PLAINTEXT listener with the PLAIN user admin
// (admin-secret) and a SCRAM-SHA-256 and SCRAM-SHA-512 credential for the
// user js (js-secret), which the Go test creates. Prints a VERSION line and
// a RESULT line for the sasl feature, as kafkajs_compat.js does.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, prefix] = process.argv.slice(2)
if (!prefix) {
  console.error('usage: node kafkajs_sasl.js BOOTSTRAP TOPIC_PREFIX')
  process.exit(2)
}

const stderrLogger = () => ({ namespace, level, log }) => {
  if (level <= logLevel.WARN) console.error(`[${namespace}] ${log.message}`, JSON.stringify(log))
}
const as = (mechanism, username, password) => new Kafka({
  clientId: prefix,
  brokers: [bootstrap],
  sasl: { mechanism, username, password },
  logLevel: logLevel.WARN,
  logCreator: stderrLogger,
  retry: { retries: 2 }
})

function check (cond, what) {
  if (!cond) throw new Error(what)
}

async function testSASL () {
  const topic = `${prefix}-sasl`
  const admin = as('plain', 'admin', 'admin-secret').admin()
  await admin.connect()
  try {
    check(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), 'createTopics returned false')
  } finally {
    await admin.disconnect()
  }

  const n = 100
  const recs = Array.from({ length: n }, (_, i) => ({ key: `k-${i}`, value: `sasl value ${i}` }))
  const producer = as('scram-sha-256', 'js', 'js-secret').producer()
  await producer.connect()
  try {
    await producer.send({ topic, acks: -1, messages: recs })
  } finally {
    await producer.disconnect()
  }

  const consumer = as('scram-sha-512', 'js', 'js-secret').consumer({ groupId: `${prefix}-sasl-reader`, maxWaitTimeInMs: 100 })
  const got = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message) } })
    const deadline = Date.now() + 30000
    while (got.length < n && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
  } finally {
    await consumer.disconnect()
  }
  check(got.length === n, `consumed ${got.length} of ${n} records`)
  for (let i = 0; i < n; i++) {
    check(got[i].key.toString() === recs[i].key && got[i].value.toString() === recs[i].value && Number(got[i].offset) === i,
      `record ${i} is ${got[i].key}=${got[i].value} at ${got[i].offset}`)
  }

  let refused = null
  const wrong = as('scram-sha-256', 'js', 'wrong').admin()
  try {
    await wrong.connect()
    await wrong.disconnect()
  } catch (e) {
    refused = `${e.name}: ${e.message}`
  }
  check(refused !== null, 'a wrong SCRAM password was accepted')
  check(/Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/.test(refused),
    `wrong password refused with ${refused}`)
  return `PLAIN admin, SCRAM-SHA-256 producer, SCRAM-SHA-512 group consumer: ${n} records; wrong password: ${refused}`
}

async function main () {
  console.log(`VERSION kafkajs ${require('kafkajs/package.json').version}`)
  const start = Date.now()
  try {
    const msg = await testSASL()
    console.log(`RESULT sasl ok ${msg.replace(/\s+/g, ' ')} (${((Date.now() - start) / 1000).toFixed(1)}s)`)
  } catch (e) {
    console.error(e)
    console.log(`RESULT sasl fail ${`${e.name}: ${e.message}`.replace(/\s+/g, ' ')}`)
  }
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
