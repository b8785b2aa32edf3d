// Package wire reads native-protocol frames from an untrusted peer. A frame's header and the
// counts and lengths inside its body are checked against what actually arrived before any
// decoder allocates for them, so a hostile or broken server costs memory in proportion to the
// bytes it sends, never to the numbers it writes.
package wire
