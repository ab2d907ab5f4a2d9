package broker

// The request logger, kafka.request.logger as in Kafka: at DEBUG (or
// TRACE) it writes one record per request this node answered, with what
// Kafka's "Completed request" line tells an operator about who asked what
// and how long it took: the API and version, correlation id, client id,
// the connection, listener, security protocol and principal, the
// request's size, the time from decoding to the answer (a parked fetch
// or acks=all produce included) and any throttle. Like Kafka's shipped
// log4j2.yaml it starts at WARN, so nothing is written until
// `kafka-configs --entity-type broker-loggers --alter --add-config
// kafka.request.logger=DEBUG` turns it on; a handled request costs one
// atomic load to find that out. Request and response bodies are left out
// (they can hold passwords, tokens and records).

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const requestLoggerName = "kafka.request.logger"

// requestLogging reports whether completed requests are to be logged.
func (c *conn) requestLogging() bool {
	return c.b.requestLogger.Enabled(context.Background(), slog.LevelDebug)
}

// logCompleted writes the request logger's record of one request.
func (c *conn) logCompleted(key, version int16, correlationID int32, took time.Duration, resp kmsg.Response) {
	listener, protocol := "", ""
	if c.listener != nil {
		listener, protocol = c.listener.name, c.listener.security.Protocol
	}
	attrs := []slog.Attr{
		slog.String("api", kafkaAPIName(key)), slog.Int("apiKey", int(key)), slog.Int("apiVersion", int(version)),
		slog.Int("correlationId", int(correlationID)), slog.String("clientId", c.clientID),
		slog.String("connection", c.nc.LocalAddr().String()+"-"+c.nc.RemoteAddr().String()),
		slog.String("listener", listener), slog.String("securityProtocol", protocol), slog.String("principal", "User:"+c.principal()),
		slog.Int("requestBytes", c.requestSize), slog.Float64("totalTimeMs", float64(took.Microseconds())/1000),
	}
	if t, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, _ := t.Throttle()
		attrs = append(attrs, slog.Int("throttleTimeMs", int(ms)))
	}
	if resp == nil {
		attrs = append(attrs, slog.Bool("noResponse", true))
	}
	c.b.requestLogger.LogAttrs(context.Background(), slog.LevelDebug, "Completed request", attrs...)
}
