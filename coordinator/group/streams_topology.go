package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// configuredTopology is a streams topology configured against the
// cluster's topics, as Kafka's InternalTopicManager.configureTopics does:
// each subtopology has as many tasks as its source topics have partitions
// (the most of them); a repartition topic without a partition count has
// as many as the subtopologies writing to it have tasks; a changelog topic
// as many as its subtopology. Topics of a copartition group must agree.
// While a source topic is missing, partition counts disagree, or internal
// topics are still to be created, the topology is not ready: status says
// why, and no task is assigned.
type configuredTopology struct {
	tasks    map[string]int32 // by subtopology id
	stateful map[string]bool  // subtopologies with changelog topics
	// sources are each subtopology's source topics, repartition ones
	// included, sorted.
	sources map[string][]string
	// status is why the topology is not ready; nil when it is.
	status *kmsg.StreamsGroupHeartbeatResponseStatus
	// invalid is why the topology cannot be configured at all (Kafka's
	// STREAMS_INVALID_TOPOLOGY error); "" when it can.
	invalid string
	// counts are the partitions of the source and repartition topics.
	counts map[string]int32
	// internal are the repartition and changelog topics, as configured;
	// create those of them that do not exist yet.
	internal, create []InternalTopic
}

func (ct *configuredTopology) ready() bool { return ct.status == nil }

// same reports whether a configuration calls for the same assignment.
func (ct *configuredTopology) same(o *configuredTopology) bool {
	return maps.Equal(ct.tasks, o.tasks) && maps.Equal(ct.stateful, o.stateful) && (ct.status == nil) == (o.status == nil)
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// sourcePartitions are the source topic partitions a set of tasks reads.
func (ct *configuredTopology) sourcePartitions(s taskSet) []topicPartitions {
	byTopic := map[string][]int32{}
	s.each(func(st string, p int32) {
		for _, t := range ct.sources[st] {
			if p < ct.counts[t] {
				byTopic[t] = append(byTopic[t], p)
			}
		}
	})
	var out []topicPartitions
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		ps := byTopic[t]
		slices.Sort(ps)
		out = append(out, topicPartitions{topic: t, partitions: slices.Compact(ps)})
	}
	return out
}

func notReady(code int8, format string, args ...any) *kmsg.StreamsGroupHeartbeatResponseStatus {
	return &kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: code, StatusDetail: fmt.Sprintf(format, args...)}
}

// configureTopology configures t against topics.
func configureTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology, topics Topics) *configuredTopology {
	ct := &configuredTopology{tasks: map[string]int32{}, stateful: map[string]bool{}, sources: map[string][]string{}}
	if t == nil {
		ct.status = notReady(streamsStatusMissingSourceTopics, "The topology is not known yet.")
		return ct
	}
	repartition := map[string]kmsg.TopicInfo{}
	for _, st := range t.Subtopologies {
		for _, ti := range st.RepartitionSourceTopics {
			repartition[ti.Topic] = ti
		}
	}
	// Source topics must exist.
	var missing []string
	existing := map[string]int32{}
	for _, st := range t.Subtopologies {
		for _, name := range st.SourceTopics {
			if _, internal := repartition[name]; internal {
				continue
			}
			if _, n, ok := topics.Topic(name); ok {
				existing[name] = n
			} else if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		ct.status = notReady(streamsStatusMissingSourceTopics, "Source topics %s are missing.", topicSummary(missing))
		return ct
	}
	// Partition counts: repartition topics with a count, then the tasks of
	// subtopologies whose sources are known, then the repartition topics
	// they write, until nothing changes.
	counts := maps.Clone(existing)
	for name, ti := range repartition {
		if ti.NumPartitions > 0 {
			counts[name] = ti.NumPartitions
		}
	}
	// Counts only grow, so this ends; the bound guards against a topology
	// this reasoning misses.
	for changed, passes := true, 0; changed; passes++ {
		if passes > len(t.Subtopologies)+len(repartition)+1 {
			ct.invalid = "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
			return ct
		}
		changed = false
		for _, st := range t.Subtopologies {
			n := int32(0)
			known := true
			for _, name := range allSources(st) {
				c, ok := counts[name]
				known = known && ok
				n = max(n, c)
			}
			if !known || n == 0 {
				continue
			}
			if ct.tasks[st.SubtopologyID] < n {
				ct.tasks[st.SubtopologyID] = n
				changed = true
			}
			for _, sink := range st.RepartitionSinkTopics {
				if _, internal := repartition[sink]; internal && repartition[sink].NumPartitions <= 0 && counts[sink] < n {
					counts[sink] = n
					changed = true
				}
			}
		}
	}
	for name := range repartition {
		if _, ok := counts[name]; !ok {
			ct.invalid = "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
			return ct
		}
	}
	for _, st := range t.Subtopologies {
		if _, ok := ct.tasks[st.SubtopologyID]; !ok {
			ct.invalid = "No source topics found for subtopology " + st.SubtopologyID
			return ct
		}
	}
	// Copartitioned topics must have as many partitions as each other;
	// repartition topics among them without their own count take the
	// user topics' (or the largest).
	for _, st := range t.Subtopologies {
		for _, g := range st.CopartitionGroups {
			var names []string
			for _, i := range g.SourceTopics { // in range: validateStreamsHeartbeat
				names = append(names, st.SourceTopics[i])
			}
			for _, i := range g.RepartitionSourceTopics {
				names = append(names, st.RepartitionSourceTopics[i].Topic)
			}
			want := int32(0)
			user := map[string]int32{}
			for _, name := range names {
				if n, ok := existing[name]; ok {
					user[name] = n
					if want != 0 && n != want {
						var pairs []string
						for _, t := range slices.Sorted(maps.Keys(user)) {
							pairs = append(pairs, fmt.Sprintf("%s=%d", t, user[t]))
						}
						ct.status = notReady(streamsStatusIncorrectlyPartitioned, "Following topics do not have the same number of partitions: [{%s}]", strings.Join(pairs, ", "))
						return ct
					}
					want = n
				}
			}
			for _, name := range names {
				want = max(want, counts[name])
			}
			for _, name := range names {
				if _, internal := repartition[name]; internal && repartition[name].NumPartitions <= 0 {
					counts[name] = want
				}
			}
			ct.tasks[st.SubtopologyID] = max(ct.tasks[st.SubtopologyID], want)
		}
	}
	// Internal topics: the repartition ones and the changelogs.
	var internal []InternalTopic
	for _, st := range t.Subtopologies {
		ct.sources[st.SubtopologyID] = slices.Sorted(slices.Values(allSources(st)))
		for _, ti := range st.RepartitionSourceTopics {
			internal = append(internal, internalTopic(ti, counts[ti.Topic]))
		}
		for _, ti := range st.StateChangelogTopics {
			ct.stateful[st.SubtopologyID] = true
			internal = append(internal, internalTopic(ti, ct.tasks[st.SubtopologyID]))
		}
	}
	ct.internal = internal
	var absent []string
	for _, it := range internal {
		_, n, ok := topics.Topic(it.Name)
		switch {
		case !ok:
			if !slices.ContainsFunc(ct.create, func(c InternalTopic) bool { return c.Name == it.Name }) {
				ct.create = append(ct.create, it)
				absent = append(absent, it.Name)
			}
		case n != it.Partitions:
			ct.status = notReady(streamsStatusIncorrectlyPartitioned, "Existing topic %s has different number of partitions: expected %d, found %d", it.Name, it.Partitions, n)
			return ct
		}
	}
	if len(absent) > 0 {
		ct.status = notReady(streamsStatusMissingInternalTopics, "Internal topics are missing: %s", topicSummary(absent))
	}
	ct.counts = counts
	return ct
}

// topicSummary names topics as Kafka's statuses do: sorted, the first
// three, and how many more.
func topicSummary(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d additional topics", strings.Join(names[:3], ", "), len(names)-3)
}

func allSources(st kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) []string {
	names := slices.Clone(st.SourceTopics)
	for _, ti := range st.RepartitionSourceTopics {
		if !slices.Contains(names, ti.Topic) {
			names = append(names, ti.Topic)
		}
	}
	return names
}

func internalTopic(ti kmsg.TopicInfo, partitions int32) InternalTopic {
	it := InternalTopic{Name: ti.Topic, Partitions: partitions, ReplicationFactor: ti.ReplicationFactor, Configs: map[string]string{}}
	if it.ReplicationFactor == 0 {
		it.ReplicationFactor = -1
	}
	for _, c := range ti.Configs {
		it.Configs[c.Key] = c.Value
	}
	return it
}
