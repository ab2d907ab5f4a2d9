// kafkajs logging in to a Gregor SASL_PLAINTEXT listener.
//
// Usage: node kafkajs_sasl.js BOOTSTRAP TOPIC_PREFIX
// BOOTSTRAP is a SASL_PLAINTEXT listener with the PLAIN user admin
// (admin-secret) and a SCRAM-SHA-256 and SCRAM-SHA-512 credential for the
// user js (js-secret), which the Go test creates. Prints a VERSION line and
// a RESULT line for the sasl feature, as kafkajs_compat.js does.
// kafkajs_oauth.js logs in with OAUTHBEARER through the helpers exported
// here.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, prefix] = process.argv.slice(2)
if (!prefix) {
  console.error(`usage: node ${require('path').basename(require.main.filename)} BOOTSTRAP TOPIC_PREFIX`)
  process.exit(2)
}

const stderrLogger = () => ({ namespace, level, log }) => {
  if (level <= logLevel.WARN) console.error(`[${namespace}] ${log.message}`, JSON.stringify(log))
}

// client is a kafkajs client of BOOTSTRAP that logs in with sasl, over
// TLS when ssl is given (kafkajs's ssl option: true, or tls options).
const client = (sasl, ssl) => new Kafka({
  clientId: prefix,
  brokers: [bootstrap],
  sasl,
  ssl,
  logLevel: logLevel.WARN,
  logCreator: stderrLogger,
  retry: { retries: 2 }
})
const as = (mechanism, username, password) => client({ mechanism, username, password })

function check (cond, what) {
  if (!cond) throw new Error(what)
}

// records are n records named after feature, the ones records() of
// compat/python/compatlib.py makes.
const records = (feature, n) => Array.from({ length: n }, (_, i) => ({ key: `k-${i}`, value: `${feature} value ${i} `.repeat(20) }))

// roundtrip creates the topic PREFIX-<feature> with the admin client of
// clients.admin, writes n records to it with the producer of
// clients.producer and reads them back, byte for byte and at offsets
// 0..n-1, with a group consumer of clients.consumer.
async function roundtrip (clients, feature, n) {
  const topic = `${prefix}-${feature}`
  const admin = clients.admin.admin()
  await admin.connect()
  try {
    check(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), 'createTopics returned false')
  } finally {
    await admin.disconnect()
  }

  const recs = records(feature, n)
  const producer = clients.producer.producer()
  await producer.connect()
  try {
    await producer.send({ topic, acks: -1, messages: recs })
  } finally {
    await producer.disconnect()
  }

  const consumer = clients.consumer.consumer({ groupId: `${topic}-reader`, maxWaitTimeInMs: 100 })
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
  return `${n} records`
}

// refusal is how the admin client of kafka failed to connect and list
// the topics ("<error name>: <message>"), or null if it did.
async function refusal (kafka) {
  const admin = kafka.admin()
  try {
    await admin.connect()
    await admin.listTopics()
  } catch (e) {
    return `${e.name}: ${e.message}`
  } finally {
    await admin.disconnect()
  }
  return null
}

async function testSASL () {
  const roundtripped = await roundtrip({
    admin: as('plain', 'admin', 'admin-secret'),
    producer: as('scram-sha-256', 'js', 'js-secret'),
    consumer: as('scram-sha-512', 'js', 'js-secret')
  }, 'sasl', 100)
  const refused = await refusal(as('scram-sha-256', 'js', 'wrong'))
  check(refused !== null, 'a wrong SCRAM password was accepted')
  check(/Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/.test(refused),
    `wrong password refused with ${refused}`)
  return `PLAIN admin, SCRAM-SHA-256 producer, SCRAM-SHA-512 group consumer: ${roundtripped}; wrong password: ${refused}`
}

// report prints the VERSION line and the RESULT line of feature: the
// message test returns, or how it failed.
async function report (feature, test) {
  console.log(`VERSION kafkajs ${require('kafkajs/package.json').version}`)
  const start = Date.now()
  try {
    const msg = await test()
    console.log(`RESULT ${feature} ok ${msg.replace(/\s+/g, ' ')} (${((Date.now() - start) / 1000).toFixed(1)}s)`)
  } catch (e) {
    console.error(e)
    console.log(`RESULT ${feature} fail ${`${e.name}: ${e.message}`.replace(/\s+/g, ' ')}`)
  }
}

module.exports = { client, check, roundtrip, refusal, report }

if (require.main === module) {
  report('sasl', testSASL).catch(e => {
    console.error(e)
    process.exit(1)
  })
}
