package cqlsim

import (
	"fmt"
	"strings"
)

// Protocol negotiation as Cassandra's native transport does it (ProtocolVersion.decode, then the
// frame decoder's USE_BETA check), release by release:
//
//	release | accepted          | beta (needs USE_BETA) | CURRENT (system.local, answers before STARTUP)
//	3.x     | v3, v4            | v5 ("5/v5-beta")      | v4
//	4.0+    | v3, v4, v5        | v6 ("6/v6-beta")      | v5
//
// The first frame of a connection in any other version gets a PROTOCOL_ERROR on stream 0 (the
// version is refused before the stream id is read) and the connection is closed. See README
// "Protocol versions" for the frame version each refusal is sent in.

// protocolVersions is what a release's ProtocolVersion.supportedVersions() lists, in order.
func (r release) protocolVersions() []string {
	if r.v4() {
		return []string{"3/v3", "4/v4", "5/v5", "6/v6-beta"}
	}
	return []string{"3/v3", "4/v4", "5/v5-beta"}
}

// betaProtocol is the release's beta version: usable only with the USE_BETA header flag.
func (r release) betaProtocol() int { return r.maxProtocol() + 1 }

// negotiate is rel.negotiate under the cluster's Config.MaxProtocolVersion: Cassandra's
// ProtocolVersion.decode refuses a version above the cap before the beta check, and answers in
// the capped version.
func (c *Cluster) negotiate(v int, useBeta bool) (refusal, bool) {
	if limit := c.cfg.MaxProtocolVersion; limit != 0 && v > limit {
		return refusal{version: limit, message: fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (%s)",
			v, strings.Join(c.rel.protocolVersions(), ", "))}, false
	}
	return c.rel.negotiate(v, useBeta)
}

// refusal is the error frame a node sends instead of answering a frame of a version it refuses.
type refusal struct {
	version int // of the error frame; v1 and v2 use their own 8-byte header
	message string
}

// negotiate returns how the release answers the first frame of a connection, in version v with
// the USE_BETA flag set or not; ok means the node serves the connection in v.
func (r release) negotiate(v int, useBeta bool) (ref refusal, ok bool) {
	switch {
	case v >= 3 && v <= r.maxProtocol():
		return refusal{}, true
	case v == r.betaProtocol() && !useBeta:
		return refusal{version: v, message: fmt.Sprintf("Beta version of the protocol used (%d/v%d-beta), but USE_BETA flag is unset", v, v)}, false
	case v == r.betaProtocol() && !r.v4():
		return refusal{}, true // 3.11's v5 beta: served in legacy frames
	}
	msg := fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (%s)",
		v, strings.Join(r.protocolVersions(), ", "))
	switch {
	case v == 1 || v == 2:
		// ProtocolVersion.UNSUPPORTED: answered in the client's own version so it can read it.
		return refusal{version: v, message: msg}, false
	case !r.v4():
		// 3.x forces MAX_SUPPORTED_VERSION, its beta v5.
		return refusal{version: r.betaProtocol(), message: msg}, false
	}
	// 4.x forces no version: the connection's, which before STARTUP is CURRENT. A v6-beta client
	// with USE_BETA lands here too: Cassandra serves it, the simulator cannot speak v6 (README,
	// deviations).
	return refusal{version: r.maxProtocol(), message: msg}, false
}
