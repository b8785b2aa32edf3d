package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gocqlReturn is the login queue with gocql's numbers: its 11 s ConnectTimeout, its ~1 s
// reconnect loop, its control connection and NumConns 2, at the floor bench/fleet measured at
// bcrypt cost 10 (24.5 logins/s).
func gocqlReturn(k, conns int, checkAbandoned float64) loginQueue {
	return loginQueue{clients: k, conns: conns, control: 1, pool: 2, perSec: 24.5, timeout: 11 * time.Second,
		spread: time.Second, again: time.Second, checkAbandoned: checkAbandoned, horizon: 20 * time.Minute, seed: 1}
}

// Below the herd (every login of the fleet checked within the timeout) the queue is the floor:
// every login checked once, none wasted, the last client served no later than the last login.
func TestLoginQueueBelowTheHerd(t *testing.T) {
	q := gocqlReturn(80, 3, 1) // 240 logins: 9.8 s of checks, under the 11 s timeout
	r := q.run()
	assert.Equal(t, 240, r.Logins)
	assert.Zero(t, r.Wasted)
	assert.Zero(t, r.Unserved)
	assert.LessOrEqual(t, r.T100, 240/24.5+1)
	assert.Greater(t, r.T100, r.T50)
}

// Above it, the share of abandoned logins the node still checks decides everything: none, and
// the fleet is served soon after the floor; half, and it is never served (each round's
// abandoned logins fill the next round's queue). Shown failing once by making checkAbandoned
// ignored (the collapse assertion failed).
func TestLoginQueueAboveTheHerd(t *testing.T) {
	none := gocqlReturn(300, 3, 0).run()
	assert.Zero(t, none.Unserved)
	assert.Less(t, none.T95, 60.0)
	half := gocqlReturn(300, 3, 0.5)
	half.horizon = 10 * time.Minute
	assert.Positive(t, half.run().Unserved, "collapse: some clients are never served")
}

// fleetRow is what this comparison reads of a bench/fleet results row.
type fleetRow struct {
	Lane   string  `json:"lane"`
	Fault  string  `json:"fault"`
	K      int     `json:"k"`
	Cost   int     `json:"bcrypt_cost"`
	T50    float64 `json:"t50_s"`
	T95    float64 `json:"t95_s"`
	T100   float64 `json:"t100_s"`
	Logins int     `json:"server_logins"`
	Wasted int     `json:"wasted_logins"`
	Setups struct {
		PerSecond []float64 `json:"per_second"`
	} `json:"setups"`
}

// fleetRows are the bench/fleet rows the lab is compared with: the ungoverned lanes at bcrypt
// cost 10, copied from bench/fleet/results.json into testdata (without the per-client times)
// so that a re-run of make fleet does not move what docs/fleet.md's lab section states (a
// re-run on 2026-12-03 in which gocql alone left 162 of 300 clients unserved replaced the
// gocql K = 300 kill row there).
func fleetRows(t *testing.T) []fleetRow {
	t.Helper()
	raw, err := os.ReadFile("testdata/fleet-rows.json")
	require.NoError(t, err)
	var res struct {
		Rows []fleetRow `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.NotEmpty(t, res.Rows)
	return res.Rows
}

// TestLabBesideTheFleet prints the lab's fleet view and the login queue beside bench/fleet's
// real figures (SIGKILL, bcrypt cost 10), the comparison docs/fleet.md quotes:
//
//	go test ./lab -run TestLabBesideTheFleet -v
//
// It holds the statements made there: the lab's fleet view (no server, a dial costs 1 ms) is
// more than 2× under every real T95; the login queue is within 2× of gocql's real T95 at
// K = 100 whatever share of abandoned logins the node checks; at K = 300 that share alone moves
// its T95 from under half the real one to never, and no share (0 to 0.5 by 0.05) puts both
// ungoverned lanes within 2× on every seed. Shown failing once by asking for a share that fits
// both (the last assertion failed at every share).
func TestLabBesideTheFleet(t *testing.T) {
	rows := fleetRows(t)
	real := map[string]fleetRow{}
	for _, r := range rows {
		if r.Fault == "kill" && r.Cost == 10 {
			real[fmt.Sprintf("%s/%d", r.Lane, r.K)] = r
		}
	}
	var shares []float64 // 0 to 0.5 by 0.05; the table shows a few
	for i := 0; i <= 10; i++ {
		shares = append(shares, float64(i)/20)
	}
	shown := []float64{0, 0.25, 0.3, 0.4}
	var b strings.Builder
	b.WriteString("\n| lane | K | real T50 / T95 s | real logins (wasted) | lab fleet view: control connections all back, s |")
	for _, w := range shown {
		fmt.Fprintf(&b, " login queue, %g of abandoned checked: T50 / T95 s (logins) |", w)
	}
	b.WriteString("\n|---|---|---|---|---|" + strings.Repeat("---|", len(shown)) + "\n")
	fits := map[string]bool{} // lane/K/share: every seed's T95 within 2× of the real one
	for _, k := range []int{100, 300} {
		// The fleet view for K clients of a 15 s outage of one node (the JVM's start after SIGKILL).
		lab, err := Run(context.Background(), Config{Outages: []time.Duration{15 * time.Second}, Samples: 1, Fleet: k, Nodes: 1, Seed: 1})
		require.NoError(t, err)
		for _, l := range []struct {
			name, labID string
			conns       int
		}{{"gocql", Gocql, 3}, {"cqlcontrol", OursEvidence, 4}} {
			r, ok := real[fmt.Sprintf("%s/%d", l.name, k)]
			if !ok {
				continue
			}
			row, ok := lab.Row(15, l.labID)
			require.True(t, ok)
			assert.Less(t, row.Fleet.AllBack*2, r.T95, "%s K=%d: the lab's fleet view is more than 2× under the real T95", l.name, k)
			fmt.Fprintf(&b, "| %s | %d | %.1f / %.1f | %d (%d) | %.2f |", l.name, k, r.T50, r.T95, r.Logins, r.Wasted, row.Fleet.AllBack)
			for _, w := range shares {
				var cells []string
				fit := true
				for seed := uint64(1); seed <= 3; seed++ {
					q := gocqlReturn(k, l.conns, w)
					q.horizon, q.seed = 10*time.Minute, seed
					m := q.run()
					if m.Unserved > 0 {
						cells = append(cells, fmt.Sprintf("never (%d unserved at 600 s)", m.Unserved))
						fit = false
						continue
					}
					cells = append(cells, fmt.Sprintf("%.0f / %.0f (%d)", m.T50, m.T95, m.Logins))
					fit = fit && m.T95 >= r.T95/2 && m.T95 <= 2*r.T95
				}
				fits[fmt.Sprintf("%s/%d/%g", l.name, k, w)] = fit
				if slices.Contains(shown, w) {
					fmt.Fprintf(&b, " %s |", strings.Join(cells, "; "))
				}
			}
			b.WriteString("\n")
		}
	}
	t.Log(b.String())
	for _, w := range shares {
		assert.True(t, fits[fmt.Sprintf("gocql/100/%g", w)], "gocql K=100, share %g: within 2×", w)
	}
	assert.False(t, fits["gocql/300/0"], "gocql K=300, none checked: more than 2× under")
	assert.True(t, fits["gocql/300/0.4"], "gocql K=300, 0.4 checked: within 2×")
	for _, w := range shares {
		assert.False(t, fits[fmt.Sprintf("gocql/300/%g", w)] && fits[fmt.Sprintf("cqlcontrol/300/%g", w)],
			"K=300, share %g: one share fits both ungoverned lanes", w)
	}
}

// While the node is down the lab's fleet view and the real fleet agree: what the lab counts (a
// control connection's dials) is what the real fleet sends while nothing answers. Seconds 2 to
// 28 of disablebinary (30 s off) are inside the outage whenever the fault was; the test prints
// both means and holds them within 10 % (shown failing once by leaving ours out of the
// cqlcontrol lane's rate: 16 % under):
//
//	go test ./lab -run TestLabBesideTheFleetWhileDown -v
func TestLabBesideTheFleetWhileDown(t *testing.T) {
	rows := fleetRows(t)
	mean := func(vs []float64) float64 {
		var sum float64
		for _, v := range vs {
			sum += v
		}
		return sum / float64(len(vs))
	}
	var b strings.Builder
	b.WriteString("\n| lane | K | real setups/s, s 2–28 of disablebinary | lab dials/s, s 2–28 of a 30 s outage (gocql's control connection; + ours for cqlcontrol) |\n|---|---|---|---|\n")
	for _, k := range []int{100, 300} {
		lab, err := Run(context.Background(), Config{Outages: []time.Duration{30 * time.Second}, Samples: 1, Fleet: k, Nodes: 1, Seed: 1, Histograms: true})
		require.NoError(t, err)
		dials := func(id string) []float64 {
			row, ok := lab.Row(30, id)
			require.True(t, ok)
			var out []float64
			for _, d := range row.Fleet.DownDials[2:29] {
				out = append(out, float64(d))
			}
			return out
		}
		g, ours := dials(Gocql), dials(OursEvidence)
		for _, r := range rows {
			if r.Fault != "disablebinary" || r.Cost != 10 || r.K != k || len(r.Setups.PerSecond) < 29 {
				continue
			}
			realRate := mean(r.Setups.PerSecond[2:29])
			var labRate float64
			switch r.Lane {
			case "gocql":
				labRate = mean(g)
			case "cqlcontrol":
				labRate = mean(g) + mean(ours)
			default:
				continue
			}
			assert.InEpsilon(t, realRate, labRate, 0.1, "%s K=%d while down: lab %.0f/s, real %.0f/s", r.Lane, k, labRate, realRate)
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f |\n", r.Lane, k, realRate, labRate)
		}
	}
	t.Log(b.String())
}

// The queue of one node of 72 when K clients come back to all of them, as JAVA-497's fleet did:
// each client's two pool connections to this node (its control connection is on one node of the
// 72; left out). Its answer there is set by the unmeasured share: with none, every one of 10,000
// clients served within the hour; with 0.05, fewer than half of either fleet, so it predicts
// nothing there (docs/fleet.md). It failed once when it claimed the share-0 fleet of 10,000 was
// mostly unserved. About a minute of CPU:
//
//	CQLCONTROL_LONG=1 go test ./lab -run TestLoginQueueAt72Nodes -v
func TestLoginQueueAt72Nodes(t *testing.T) {
	if os.Getenv("CQLCONTROL_LONG") != "1" {
		t.Skip("CQLCONTROL_LONG=1 runs it (minutes of CPU)")
	}
	for _, k := range []int{10000, 40000} {
		for _, w := range []float64{0, 0.05} {
			q := gocqlReturn(k, 2, w)
			q.control, q.horizon = 0, time.Hour
			r := q.run()
			t.Logf("K = %d, share %g: %d of %d served within 1 h (T50 / T95 / T100 of those %.0f / %.0f / %.0f s), %d logins, %d wasted",
				k, w, k-r.Unserved, k, r.T50, r.T95, r.T100, r.Logins, r.Wasted)
			if k == 10000 && w == 0 {
				assert.Zero(t, r.Unserved, "K = %d, share 0: every client served", k)
			}
			if w > 0 {
				assert.Greater(t, r.Unserved, k/2, "K = %d, share %g: most never served", k, w)
			}
		}
	}
}
