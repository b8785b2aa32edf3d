package metadata

import (
	"testing"

	"github.com/datastax/go-cassandra-native-protocol/datacodec"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// encodeValue is v encoded as a column of type typ would carry it (nil for NULL).
func encodeValue(tb testing.TB, col string, v any) []byte {
	tb.Helper()
	for _, c := range peersCols {
		if c.name == col {
			codec, err := datacodec.NewCodec(c.typ)
			if err != nil {
				tb.Fatal(err)
			}
			b, err := codec.Encode(v, v4)
			if err != nil {
				tb.Fatal(err)
			}
			return b
		}
	}
	tb.Fatalf("no column %s", col)
	return nil
}

// FuzzReadTablesPeerRow puts one system.peers row of arbitrary values (raw column bytes: peer,
// host_id, rpc_address, data_center, tokens, schema_version) after a good peer, and checks
// what issue 10 promises: ReadTables does not panic, a bad row is skipped rather than failing
// the refresh, the good peer is always kept, and what is kept makes a valid snapshot and ring.
func FuzzReadTablesPeerRow(f *testing.F) {
	good := peerRow(3, "300")
	f.Add(encodeValue(f, "peer", ipN(2)), encodeValue(f, "host_id", uuidN(2)), encodeValue(f, "rpc_address", ipN(2)),
		[]byte("dc1"), encodeValue(f, "tokens", []string{"200"}), encodeValue(f, "schema_version", schemaN(1)))
	f.Add(encodeValue(f, "peer", ipN(2)), encodeValue(f, "host_id", uuidN(2)), []byte{127, 0, 0, 2, 9}, // 5-byte inet
		[]byte("dc1"), encodeValue(f, "tokens", []string{"200"}), encodeValue(f, "schema_version", schemaN(1)))
	f.Add(encodeValue(f, "peer", ipN(2)), encodeValue(f, "host_id", uuidN(2)), encodeValue(f, "rpc_address", ipN(2)),
		[]byte("dc1"), encodeValue(f, "tokens", []string{"xyz"}), encodeValue(f, "schema_version", schemaN(1)))
	f.Add(encodeValue(f, "peer", ipN(2)), encodeValue(f, "host_id", uuidN(2)), encodeValue(f, "rpc_address", ipN(2)),
		[]byte("dc1"), encodeValue(f, "tokens", []string{"300"}), []byte("mistyped")) // token of the good peer; bad uuid
	f.Add(encodeValue(f, "peer", ipN(2)), encodeValue(f, "host_id", uuidN(3)), encodeValue(f, "rpc_address", ipN(2)),
		[]byte("dc1"), encodeValue(f, "tokens", []string{"200", "200"}), []byte(nil)) // the good peer's host_id
	f.Fuzz(func(t *testing.T, peer, hostID, rpc, dc, tokens, schema []byte) {
		local := rowsResult(t, "local", localCols, []map[string]any{localRow(1, "100")}, v4)
		peers := rowsResult(t, "peers", peersCols, []map[string]any{good, good}, v4)
		row := peers.Data[1]
		for col, b := range map[string][]byte{"peer": peer, "host_id": hostID, "rpc_address": rpc,
			"data_center": dc, "rack": []byte("r1"), "tokens": tokens, "schema_version": schema, "preferred_ip": nil} {
			for i, c := range peersCols {
				if c.name == col {
					row[i] = b
				}
			}
		}
		cfg, skipped, err := ReadTables(Tables{Local: local, Peers: peers, Port: 9042, Version: primitive.ProtocolVersion4})
		if err != nil {
			t.Fatalf("one bad peer row failed the refresh: %v", err)
		}
		if len(cfg.Hosts)+len(skipped) != 3 {
			t.Fatalf("%d hosts kept and %d skipped of 3 rows", len(cfg.Hosts), len(skipped))
		}
		kept := false
		for _, h := range cfg.Hosts {
			kept = kept || h.HostID() == uuidN(3)
		}
		if !kept {
			t.Fatalf("the good peer was not kept; skipped: %v", skipped)
		}
		s, err := NewSnapshot(cfg)
		if err != nil {
			t.Fatalf("kept hosts make no snapshot: %v", err)
		}
		n := 0
		for _, h := range cfg.Hosts {
			n += h.NumTokens()
		}
		if s.Ring().Len() != n {
			t.Fatalf("the ring has %d tokens, the kept hosts %d", s.Ring().Len(), n)
		}
	})
}
