// Package protocol is Gregor's Kafka wire layer without any knowledge of
// topics or disks: size-prefixed frames, request and response headers, the
// record batch (magic v2) format with its CRC-32C, and the compression codecs.
//
// A Kafka request on the wire is
//
//	int32 size | request header | request body
//
// where the header is, by header version (decided by the request's API key
// and version: flexible versions use v2):
//
//	v0: int16 api_key, int16 api_version, int32 correlation_id
//	v1: v0 + nullable string client_id (int16 length)
//	v2: v1 + tagged fields
//
// and a response is
//
//	int32 size | int32 correlation_id | [tagged fields, for flexible versions] | body
//
// ApiVersions responses always use the v0 response header, whatever the
// version (KIP-511). Message bodies are decoded and encoded with
// github.com/twmb/franz-go/pkg/kmsg; this package only frames them.
package protocol
