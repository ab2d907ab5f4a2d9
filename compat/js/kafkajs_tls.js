// kafkajs over TLS to a Gregor SASL_SSL listener.
//
// Usage: node kafkajs_tls.js BOOTSTRAP TOPIC_PREFIX
// BOOTSTRAP is a SASL_SSL listener with a SCRAM-SHA-512 credential for the
// user js (js-secret), which the Go test creates; GREGOR_TLS_CA names the
// PEM file of the broker's certificate. Admin, producer and group consumer
// trust it through kafkajs's ssl.ca option; a client trusting only Node's
// own roots must fail to connect. Prints a VERSION line and a RESULT line
// for the tls feature, as kafkajs_sasl.js does.
'use strict'

const fs = require('fs')
const { client, check, roundtrip, refusal, report } = require('./kafkajs_sasl')

const scram = { mechanism: 'scram-sha-512', username: 'js', password: 'js-secret' }

async function testTLS () {
  const trusting = client(scram, { ca: [fs.readFileSync(process.env.GREGOR_TLS_CA, 'utf8')] })
  const roundtripped = await roundtrip({ admin: trusting, producer: trusting, consumer: trusting }, 'tls', 100)
  const refused = await refusal(client(scram, true))
  check(refused !== null, 'a client that does not trust the broker\'s certificate connected')
  check(/certificate/.test(refused), `an untrusted certificate refused with ${refused}`)
  return `SCRAM-SHA-512 over SASL_SSL, the certificate trusted from PEM: ${roundtripped}; untrusted: ${refused}`
}

report('tls', testTLS).catch(e => {
  console.error(e)
  process.exit(1)
})
