// kafkajs against a Gregor broker.
//
// Usage: node kafkajs_compat.js BOOTSTRAP TOPIC_PREFIX
//
// Prints `VERSION kafkajs <version>` and one `RESULT <feature> ok|fail
// <message>` line per feature; compat/js_test.go records them in COMPAT.md
// and fails on any failure. A failing feature does not stop the others.
// kafkajs has gzip built in; snappy, lz4 and zstd come from the codec
// packages in package.json (kafkajs-snappy, kafkajs-lz4,
// @sensejs/kafkajs-zstd-support, which registers itself on import; its
// CommonJS build lacks its tslib helpers, so main imports the ES module).
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')
const LZ4Codec = require('kafkajs-lz4')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec

const [bootstrap, prefix] = process.argv.slice(2)
if (!prefix) {
  console.error('usage: node kafkajs_compat.js BOOTSTRAP TOPIC_PREFIX')
  process.exit(2)
}

// kafkajs logs to stdout by default; its warnings and errors go to stderr
// here so that stdout carries only the results.
const stderrLogger = () => ({ namespace, level, log }) => {
  if (level <= logLevel.WARN) console.error(`[${namespace}] ${log.message}`, JSON.stringify(log))
}
const kafka = new Kafka({ clientId: prefix, brokers: [bootstrap], logLevel: logLevel.WARN, logCreator: stderrLogger })
const TIMEOUT = 30000

function result (feature, ok, message) {
  console.log(`RESULT ${feature} ${ok ? 'ok' : 'fail'} ${String(message).replace(/\s+/g, ' ')}`)
}

async function run (feature, fn) {
  const start = Date.now()
  try {
    const msg = await fn()
    result(feature, true, `${msg || ''} (${((Date.now() - start) / 1000).toFixed(1)}s)`)
  } catch (e) {
    console.error(e)
    result(feature, false, `${e.name}: ${e.message}`)
  }
}

function check (cond, what) {
  if (!cond) throw new Error(what)
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// waitUntil polls cond (which may be async) until it is true or the deadline passes.
async function waitUntil (cond, what, timeout = TIMEOUT) {
  const deadline = Date.now() + timeout
  for (;;) {
    const v = await cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

// records are n distinct messages whose values compress well on their own,
// so that every batch, even of one record, is worth compressing.
// scriptRecords in compat/script_helpers_test.go makes the same ones.
function records (feature, n) {
  return Array.from({ length: n }, (_, i) => ({ key: `k-${i}`, value: `${feature} value ${i} `.repeat(20) }))
}

async function withAdmin (fn) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

async function createTopic (topic, numPartitions) {
  await withAdmin(async admin => {
    const created = await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 1 }], waitForLeaders: true })
    check(created, `createTopics(${topic}) returned false`)
  })
}

// produce sends the records in one request per 50 and returns the acks.
async function produce (topic, recs, { producer: conf = {}, compression } = {}) {
  const producer = kafka.producer({ allowAutoTopicCreation: true, ...conf })
  await producer.connect()
  try {
    const acks = []
    for (let i = 0; i < recs.length; i += 50) {
      acks.push(...await producer.send({ topic, acks: -1, compression, messages: recs.slice(i, i + 50) }))
    }
    return acks
  } finally {
    await producer.disconnect()
  }
}

// consume runs a consumer of group (with the settings conf) over topic
// until it has n records, returning [{key, value, partition, offset}].
async function consume (group, topic, n, runConf = {}, conf = {}) {
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100, ...conf })
  const got = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      ...runConf,
      eachMessage: async ({ partition, message }) => {
        got.push({ key: message.key.toString(), value: message.value.toString(), partition, offset: Number(message.offset) })
      }
    })
    await waitUntil(() => got.length >= n, `${n} records of ${topic} (have ${got.length})`)
    return got
  } finally {
    await consumer.disconnect()
  }
}

function sameRecords (got, want, what) {
  check(got.length === want.length, `${what}: ${got.length} records, want ${want.length}`)
  for (let i = 0; i < want.length; i++) {
    check(got[i].key === want[i].key && got[i].value === want[i].value,
      `${what}: record ${i} is ${got[i].key}=${got[i].value}, want ${want[i].key}=${want[i].value}`)
  }
}

// sameRecordSet is sameRecords in any order, for records read from several partitions.
function sameRecordSet (got, want, what) {
  const str = r => `${r.key}=${r.value}`
  const sorted = rs => [...rs].sort((a, b) => str(a) < str(b) ? -1 : str(a) > str(b) ? 1 : 0)
  sameRecords(sorted(got), sorted(want), what)
}

// roundtrip produces n records to <prefix>-<feature> and reads them back.
async function roundtrip (feature, opts = {}, n = 200) {
  const topic = `${prefix}-${feature}`
  const recs = records(feature, n)
  const acks = await produce(topic, recs, opts)
  check(acks.length === n / 50 && acks.every((a, i) => a.errorCode === 0 && Number(a.baseOffset) === i * 50),
    `acks ${JSON.stringify(acks.slice(0, 2))}..., want base offsets 0, 50, ...`)
  const got = await consume(`${prefix}-${feature}-reader`, topic, n)
  sameRecords(got, recs, topic)
  check(got.every((r, i) => r.offset === i), `${topic}: consumed offsets are not 0..${n - 1}`)
  return `${n} records`
}

// testConsume: keys, values, headers and CreateTime timestamps come back as
// sent, and the offsets found by timestamp agree.
async function testConsume () {
  const topic = `${prefix}-consume`
  const n = 200
  const base = Date.now() - 3600000
  const recs = records('consume', n).map((r, i) => ({ ...r, timestamp: String(base + i * 1000), headers: { h: String(i), empty: '' } }))
  await produce(topic, recs)
  const consumer = kafka.consumer({ groupId: `${prefix}-consume-reader`, maxWaitTimeInMs: 100 })
  const got = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message) } })
    await waitUntil(() => got.length >= n, `${n} records (have ${got.length})`)
  } finally {
    await consumer.disconnect()
  }
  check(got.length === n, `${got.length} records, want ${n}`)
  got.forEach((m, i) => {
    check(m.key.toString() === recs[i].key && m.value.toString() === recs[i].value && m.offset === String(i), `record ${i} differs`)
    check(m.timestamp === recs[i].timestamp, `record ${i} timestamp ${m.timestamp}, want ${recs[i].timestamp}`)
    const h = Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, v.toString()]))
    check(JSON.stringify(h) === JSON.stringify({ h: String(i), empty: '' }), `record ${i} headers ${JSON.stringify(h)}`)
  })
  const byTime = await withAdmin(admin => admin.fetchTopicOffsetsByTimestamp(topic, base + 150 * 1000 - 1))
  check(byTime.length === 1 && byTime[0].offset === '150', `fetchTopicOffsetsByTimestamp: ${JSON.stringify(byTime)}, want 150`)
  return `${n} records with headers and timestamps; offset by time agrees`
}

async function testProduce () {
  const topic = `${prefix}-produce`
  await createTopic(topic, 3)
  const acks = await produce(topic, records('produce', 300))
  const perPartition = {}
  for (const a of acks) {
    check(a.errorCode === 0, `ack ${JSON.stringify(a)}`)
    perPartition[a.partition] = (perPartition[a.partition] || 0) + 1
  }
  check(Object.keys(perPartition).length === 3, `records went to partitions ${Object.keys(perPartition)}, want 0, 1, 2`)
  const ends = await withAdmin(admin => admin.fetchTopicOffsets(topic))
  const total = ends.reduce((s, p) => s + Number(p.high), 0)
  check(total === 300, `end offsets ${JSON.stringify(ends)} add up to ${total}, want 300`)
  return `300 records over 3 partitions; ${await largeRecords()}`
}

// largeRecords: a 900 KB record is stored and fetched whole under a 1 KB
// fetch limit (KIP-74); a 2 MB one is refused with MESSAGE_TOO_LARGE.
async function largeRecords () {
  const topic = `${prefix}-large`
  const big = require('crypto').randomBytes(900000)
  const acks = await produce(topic, [{ value: big }])
  check(acks.length === 1 && acks[0].baseOffset === '0', `900 KB record acked ${JSON.stringify(acks)}`)
  let refused
  try {
    await produce(topic, [{ value: require('crypto').randomBytes(2000000) }], { producer: { retry: { retries: 0 } } })
  } catch (e) {
    refused = e
  }
  check(refused && refused.type === 'MESSAGE_TOO_LARGE', `2 MB record: ${refused ? refused.type || refused.message : 'accepted'}, want MESSAGE_TOO_LARGE`)
  const consumer = kafka.consumer({ groupId: `${prefix}-large-reader`, maxWaitTimeInMs: 100, maxBytes: 1000, maxBytesPerPartition: 1000 })
  let got
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got = got || message.value } })
    await waitUntil(() => got, 'the 900 KB record')
  } finally {
    await consumer.disconnect()
  }
  check(Buffer.compare(got, big) === 0, '900 KB record came back different')
  return '900 KB record fetched under a 1 KB limit, 2 MB refused'
}

// testGroup: two members of one group share a 4-partition topic; every
// record arrives exactly once.
async function testGroup () {
  const topic = `${prefix}-group`
  const group = `${prefix}-group-g`
  const n = 400
  await createTopic(topic, 4)
  const members = [0, 1].map(() => kafka.consumer({ groupId: group, maxWaitTimeInMs: 100, heartbeatInterval: 500 }))
  const assigned = [[], []]
  const got = [[], []]
  try {
    for (let i = 0; i < 2; i++) {
      const c = members[i]
      c.on(c.events.GROUP_JOIN, e => { assigned[i] = e.payload.memberAssignment[topic] || [] })
      await c.connect()
      await c.subscribe({ topic, fromBeginning: true })
      await c.run({ eachMessage: async ({ message }) => { got[i].push(message.key.toString()) } })
    }
    await waitUntil(() => {
      const all = new Set([...assigned[0], ...assigned[1]])
      return assigned[0].length > 0 && assigned[1].length > 0 && all.size === 4 &&
        assigned[0].length + assigned[1].length === 4
    }, `both members to share the 4 partitions (${JSON.stringify(assigned)})`, 60000)
    const sizes = assigned.map(a => a.length)
    await produce(topic, records('group', n))
    await waitUntil(() => got[0].length + got[1].length >= n, `${n} records`, 60000)
    const keys = [...got[0], ...got[1]]
    check(keys.length === n && new Set(keys).size === n,
      `got ${keys.length} records, ${new Set(keys).size} distinct, want ${n} once each`)
    check(got[0].length > 0 && got[1].length > 0, `one member got nothing: ${got[0].length}/${got[1].length}`)
    return `assignment ${sizes}, records ${got[0].length}+${got[1].length}`
  } finally {
    await Promise.all(members.map(c => c.disconnect()))
  }
}

// testCommit: a consumer commits offset 60; a new consumer of the group resumes there.
async function testCommit () {
  const topic = `${prefix}-commit`
  const group = `${prefix}-commit-g`
  const recs = records('commit', 100)
  await produce(topic, recs)
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100 })
  const first = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => { first.push(Number(message.offset)) } })
    await waitUntil(() => first.length >= 60, '60 records')
    await consumer.commitOffsets([{ topic, partition: 0, offset: '60' }])
  } finally {
    await consumer.disconnect()
  }
  check(first[0] === 0, `first consumer started at ${first[0]}`)
  const committed = await withAdmin(admin => admin.fetchOffsets({ groupId: group, topics: [topic] }))
  const offset = committed[0].partitions.find(p => p.partition === 0).offset
  check(offset === '60', `fetchOffsets: ${JSON.stringify(committed)}, want offset 60`)
  const rest = await consume(group, topic, 40, { autoCommit: false })
  check(rest.length === 40 && rest[0].offset === 60, `resumed at offset ${rest[0] && rest[0].offset} with ${rest.length} records, want 60 and 40`)
  sameRecords(rest, recs.slice(60), 'resumed records')
  return 'resumed at 60; fetchOffsets sees 60'
}

async function testAdmin () {
  const topic = `${prefix}-admin`
  const group = `${prefix}-commit-g`
  return withAdmin(async admin => {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
      waitForLeaders: true
    })
    check(created, 'createTopics returned false')
    check((await admin.listTopics()).includes(topic), 'created topic not listed')
    let md = await admin.fetchTopicMetadata({ topics: [topic] })
    check(md.topics[0].name === topic && md.topics[0].partitions.length === 2, `fetchTopicMetadata: ${JSON.stringify(md)}`)

    await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] })
    md = await admin.fetchTopicMetadata({ topics: [topic] })
    check(md.topics[0].partitions.length === 5, `after createPartitions: ${md.topics[0].partitions.length} partitions, want 5`)

    // before cleanup.policy becomes compact: a compacted topic takes only keyed records
    await produce(topic, Array.from({ length: 10 }, (_, i) => ({ value: `v${i}`, partition: 0 })))
    let ends = await admin.fetchTopicOffsets(topic)
    let p0 = ends.find(p => p.partition === 0)
    check(p0.low === '0' && p0.high === '10', `fetchTopicOffsets partition 0: ${JSON.stringify(p0)}, want 0..10`)
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
    ends = await admin.fetchTopicOffsets(topic)
    p0 = ends.find(p => p.partition === 0)
    check(p0.low === '4' && p0.high === '10', `after deleteTopicRecords: ${JSON.stringify(p0)}, want 4..10`)


    const resource = { type: ConfigResourceTypes.TOPIC, name: topic }
    const value = async key => {
      const d = await admin.describeConfigs({ resources: [{ ...resource, configNames: [key] }], includeSynonyms: false })
      const entry = d.resources[0].configEntries.find(e => e.configName === key)
      return entry && entry.configValue
    }
    check(await value('retention.ms') === '3600000', `describeConfigs retention.ms = ${await value('retention.ms')}`)
    await admin.alterConfigs({ resources: [{ ...resource, configEntries: [{ name: 'retention.ms', value: '7200000' }, { name: 'cleanup.policy', value: 'compact' }] }] })
    check(await value('retention.ms') === '7200000' && await value('cleanup.policy') === 'compact',
      `after alterConfigs: retention.ms=${await value('retention.ms')} cleanup.policy=${await value('cleanup.policy')}`)

    const cluster = await admin.describeCluster()
    check(cluster.brokers.length === 1 && cluster.controller === cluster.brokers[0].nodeId, `describeCluster: ${JSON.stringify(cluster)}`)

    const { groups } = await admin.listGroups()
    check(groups.some(g => g.groupId === group && g.protocolType === 'consumer'), `listGroups ${JSON.stringify(groups)} lacks ${group}`)
    const described = await admin.describeGroups([group])
    const g = described.groups[0]
    check(g.groupId === group && g.errorCode === 0 && g.state === 'Empty' && g.protocolType === 'consumer',
      `describeGroups: ${JSON.stringify(g)}`)
    const offsets = await admin.fetchOffsets({ groupId: group, topics: [`${prefix}-commit`] })
    check(offsets[0].partitions[0].offset === '60', `fetchOffsets: ${JSON.stringify(offsets)}`)

    const commitTopic = `${prefix}-commit`
    await admin.setOffsets({ groupId: group, topic: commitTopic, partitions: [{ partition: 0, offset: '30' }] })
    let committed = await admin.fetchOffsets({ groupId: group, topics: [commitTopic] })
    check(committed[0].partitions[0].offset === '30', `after setOffsets: ${JSON.stringify(committed)}`)
    await admin.resetOffsets({ groupId: group, topic: commitTopic, earliest: true })
    committed = await admin.fetchOffsets({ groupId: group, topics: [commitTopic], resolveOffsets: true })
    check(committed[0].partitions[0].offset === '0', `after resetOffsets earliest: ${JSON.stringify(committed)}`)
    const deleted = await admin.deleteGroups([group])
    check(deleted.length === 1 && deleted[0].errorCode === 0, `deleteGroups: ${JSON.stringify(deleted)}`)
    check(!(await admin.listGroups()).groups.some(g => g.groupId === group), 'deleted group still listed')

    await admin.deleteTopics({ topics: [topic] })
    await waitUntil(async () => !(await admin.listTopics()).includes(topic), 'deleted topic to leave the list')
    return 'createTopics, fetchTopicMetadata, createPartitions, describeConfigs, alterConfigs, describeCluster, ' +
      'listGroups, describeGroups, fetchOffsets, fetchTopicOffsets, deleteTopicRecords, setOffsets, resetOffsets, deleteGroups, deleteTopics'
  })
}

// transactional is a connected producer with the settings kafkajs requires
// of one with a transactionalId.
async function transactional (id) {
  const producer = kafka.producer({ transactionalId: `${prefix}-${id}`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  return producer
}

// inTransaction runs fn(transaction) in a new transaction of producer,
// then commits it, or aborts it if commit is false or fn throws.
async function inTransaction (producer, commit, fn) {
  const txn = await producer.transaction()
  try {
    await fn(txn)
  } catch (e) {
    await txn.abort()
    throw e
  }
  await (commit ? txn.commit() : txn.abort())
}

// testTransactions: three transactions of 30 records each to a
// 2-partition topic, committed, aborted and committed, as kafkajs's own
// consumers see them: read_committed only the committed records,
// read_uncommitted all of them. compat/script_helpers_test.go reads the
// topic back with franz-go expecting these records.
async function testTransactions () {
  const topic = `${prefix}-txn`
  await createTopic(topic, 2)
  const [first, aborted, second] = ['txn-first', 'txn-aborted', 'txn-second'].map(f => records(f, 30))
  const producer = await transactional('txn-id')
  try {
    await inTransaction(producer, true, txn => txn.send({ topic, messages: first }))
    await inTransaction(producer, false, txn => txn.send({ topic, messages: aborted }))
    await inTransaction(producer, true, txn => txn.send({ topic, messages: second }))
  } finally {
    await producer.disconnect()
  }
  const committed = [...first, ...second]
  sameRecordSet(await consume(`${prefix}-txn-committed`, topic, 60, {}, { readUncommitted: false }), committed, 'read_committed')
  sameRecordSet(await consume(`${prefix}-txn-uncommitted`, topic, 90, {}, { readUncommitted: true }),
    [...committed, ...aborted], 'read_uncommitted')
  return `commit, abort, commit: read_committed sees 60 records, read_uncommitted 90; ${await consumeTransformProduce()}`
}

// consumeTransformProduce: a group reads <prefix>-txn-in (100 records)
// and copies each batch, "txn-in" renamed "txn-out" in the values, to
// <prefix>-txn-out in one transaction that also commits the batch's offsets
// for the group (sendOffsets). The group ends at the input's end offsets and
// a read_committed consumer finds the copies.
async function consumeTransformProduce () {
  const [src, dst, group] = ['txn-in', 'txn-out', 'txn-group'].map(s => `${prefix}-${s}`)
  const n = 100
  await createTopic(src, 2)
  await createTopic(dst, 2)
  await produce(src, records('txn-in', n))
  const producer = await transactional('txn-eos')
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100, readUncommitted: false })
  let copied = 0
  let txns = 0
  let failure
  try {
    await consumer.connect()
    await consumer.subscribe({ topic: src, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        try {
          if (batch.isEmpty()) return
          copied += await copyBatch(producer, group, dst, batch)
          txns++
        } catch (e) {
          failure = failure || e
          throw e
        }
      }
    })
    await waitUntil(() => failure || copied >= n, `${n} records copied (have ${copied})`)
    if (failure) throw failure
  } finally {
    await consumer.disconnect()
    await producer.disconnect()
  }
  check(copied === n, `copied ${copied} records, want ${n}`)
  await withAdmin(admin => waitUntil(() => committedAtEnd(admin, group, src), `${group}'s offsets at the end of ${src}`))
  sameRecordSet(await consume(`${prefix}-txn-out-reader`, dst, n, {}, { readUncommitted: false }), records('txn-out', n), dst)
  return `${n} records copied in ${txns} transactions with sendOffsets, the group's offsets at the input's end`
}

// copyBatch copies batch to dst in one transaction with its offsets for group.
async function copyBatch (producer, group, dst, batch) {
  const messages = batch.messages.map(m => ({ key: m.key, value: m.value.toString().replaceAll('txn-in', 'txn-out') }))
  const next = String(Number(batch.lastOffset()) + 1)
  await inTransaction(producer, true, async txn => {
    await txn.send({ topic: dst, messages })
    await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] })
  })
  return messages.length
}

// committedAtEnd tells whether group has committed the end offset of every partition of topic.
async function committedAtEnd (admin, group, topic) {
  const ends = await admin.fetchTopicOffsets(topic)
  const [{ partitions }] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  return ends.every(e => partitions.some(p => p.partition === e.partition && p.offset === e.high))
}

async function main () {
  await import('@sensejs/kafkajs-zstd-support')
  console.log(`VERSION kafkajs ${require('kafkajs/package.json').version}`)
  await run('produce', testProduce)
  await run('consume', testConsume)
  await run('group', testGroup)
  await run('commit', testCommit)
  await run('admin', testAdmin)
  await run('idempotence', () => roundtrip('idempotence', { producer: { idempotent: true, maxInFlightRequests: 1 } }))
  await run('gzip', () => roundtrip('gzip', { compression: CompressionTypes.GZIP }))
  await run('snappy', () => roundtrip('snappy', { compression: CompressionTypes.Snappy }))
  await run('lz4', () => roundtrip('lz4', { compression: CompressionTypes.LZ4 }))
  await run('zstd', () => roundtrip('zstd', { compression: CompressionTypes.ZSTD }))
  await run('transactions', testTransactions)
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
