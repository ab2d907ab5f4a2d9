// kafkajs logging in to a Gregor OAUTHBEARER listener, with the token of
// an oauthBearerProvider as kafkajs users give it.
//
// Usage: node kafkajs_oauth.js BOOTSTRAP TOPIC_PREFIX
// BOOTSTRAP is a SASL_PLAINTEXT listener with OAUTHBEARER; GREGOR_OAUTH
// (JSON, from compat/oauth_scripts_test.go) says how to log in to it:
// with a ready token ("token", an unsecured JWT), or with a token from the
// identity provider's client credentials grant ("token_url", "client_id",
// "client_secret"), in which case "expired_token" must be refused. Prints
// a VERSION line and a RESULT line for the oauthbearer feature, as
// kafkajs_sasl.js does.
'use strict'

const { client, check, roundtrip, refusal, report } = require('./kafkajs_sasl')

const login = JSON.parse(process.env.GREGOR_OAUTH || '{}')

// bearer is a kafkajs client logging in with the tokens of provider.
const bearer = provider => client({ mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: await provider() }) })

// clientCredentials is a token provider that asks the token endpoint for
// an access token with the client credentials grant (the client's id and
// secret in HTTP basic authentication) and reuses it until a minute
// before it expires.
function clientCredentials ({ token_url: url, client_id: id, client_secret: secret }) {
  let token = null
  let renewAt = 0
  return async () => {
    if (token !== null && Date.now() < renewAt) return token
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'kafka' })
    })
    if (!res.ok) throw new Error(`the token endpoint answered ${res.status}: ${await res.text()}`)
    const body = await res.json()
    token = body.access_token
    renewAt = Date.now() + (body.expires_in - 60) * 1000
    return token
  }
}

async function testOAuthBearer () {
  const kafka = login.token_url ? bearer(clientCredentials(login)) : bearer(async () => login.token)
  const roundtripped = await roundtrip({ admin: kafka, producer: kafka, consumer: kafka }, 'oauthbearer', 100)
  const how = login.token_url ? 'token from the client credentials grant' : 'unsecured token'
  if (!login.expired_token) return `${how}: admin, producer, group consumer: ${roundtripped}`
  // kafkajs takes the challenge that refuses a token for a success (it
  // never sends RFC 7628's ^A), so the broker fails the authentication at
  // its next request and closes the connection.
  const refused = await refusal(bearer(async () => login.expired_token))
  check(refused !== null, 'an expired token was accepted')
  check(/KafkaJSConnectionClosedError|KafkaJSSASLAuthenticationError/.test(refused), `an expired token refused with ${refused}`)
  return `${how}: admin, producer, group consumer: ${roundtripped}; expired token: ${refused}`
}

report('oauthbearer', testOAuthBearer).catch(e => {
  console.error(e)
  process.exit(1)
})
