package lab

import (
	"fmt"
	"strings"
	"time"
)

// Check IDs. The attempts check is per strategy: "attempts-vs-gocql/" + OursEvidence or Ours.
const (
	CheckEvidenceP99   = "evidence-p99"       // with evidence, p99 within 0.2 s of the best model
	CheckBlindVsPrefix = "blind-p99-vs-"      // without evidence, p99 at or below this model's
	CheckBlindCap      = "blind-max-vs-cap"   // without evidence, never later than DelayCap
	CheckAttemptsPre   = "attempts-vs-gocql/" // for outages of 1 min or more, at most gocql/10
	evidenceSlack      = 200 * time.Millisecond
	attemptsFrom       = time.Minute
	attemptsFraction   = 10
)

// models are the drivers ours is held against.
var models = []string{Gocql, Python, PythonHB, Java4, Rust}

// checks evaluates the lab's claims on res and explains every one that is not met.
func checks(cfg Config, res *Result) []Check {
	var out []Check
	name := map[string]string{}
	for _, s := range res.Strategies {
		name[s.ID] = s.Name
	}
	for _, length := range cfg.Outages {
		l := length.Seconds()
		row := func(id string) Row { r, _ := res.Row(l, id); return r }
		ev, blind, gocql := row(OursEvidence), row(Ours), row(Gocql)

		best := row(models[0])
		for _, id := range models[1:] {
			if r := row(id); r.P99 < best.P99 {
				best = r
			}
		}
		out = append(out, Check{ID: CheckEvidenceP99, Outage: l, Value: ev.P99, Bound: best.P99 + evidenceSlack.Seconds(),
			Claim: fmt.Sprintf("with evidence, ours' p99 lateness is within %v of the best modelled p99 (%s)", evidenceSlack, name[best.Strategy])})
		for _, id := range []string{Python, PythonHB, Java4} {
			out = append(out, Check{ID: CheckBlindVsPrefix + id, Outage: l, Value: blind.P99, Bound: row(id).P99,
				Claim: "without evidence, ours' p99 lateness is at or below " + name[id] + "'s"})
		}
		out = append(out, Check{ID: CheckBlindCap, Outage: l, Value: blind.Max,
			Bound: (cfg.Reconnect.DelayCap + cfg.DialTime).Seconds(),
			Claim: fmt.Sprintf("without evidence, ours is never later than DelayCap (%v, plus the one %v dial that was in flight when the cluster came back)",
				cfg.Reconnect.DelayCap, cfg.DialTime)})
		if length >= attemptsFrom {
			for _, r := range []Row{ev, blind} {
				out = append(out, Check{ID: CheckAttemptsPre + r.Strategy, Outage: l, Value: r.Attempts, Bound: gocql.Attempts / attemptsFraction,
					Claim: fmt.Sprintf("%s makes at most 1/%d of gocql's attempts", name[r.Strategy], attemptsFraction)})
			}
		}
	}
	for i := range out {
		c := &out[i]
		c.Met = c.Value <= c.Bound
		if !c.Met {
			c.Note = explain(cfg, res, *c)
		}
	}
	return out
}

// explain says why a claim was not met, with the run's own numbers.
func explain(cfg Config, res *Result, c Check) string {
	row := func(id string) Row { r, _ := res.Row(c.Outage, id); return r }
	outage := shortDuration(time.Duration(c.Outage * float64(time.Second)))
	switch {
	case c.ID == CheckEvidenceP99:
		return fmt.Sprintf("gocql's host events reach ours %v after gocql's own control connection is back (pool connect + queue window), "+
			"and the re-armed attempt is rate-limited to one per %v; the best model reconnects on its own first sweep after the cluster is ready",
			cfg.evidenceDelay(), cfg.Reconnect.MinReArmInterval)
	case c.ID == CheckBlindVsPrefix+PythonHB:
		hb, ours, gocql := row(PythonHB), row(Ours), row(Gocql)
		return fmt.Sprintf("before its fix the Python driver's %v heartbeat restarted the schedule from %v on every tick, so it attempts "+
			"at +0, +1, +3, +7 and +15 s of each tick and is never much more than 15 s late, at %.0f attempts per %s outage against "+
			"ours' %.0f (gocql %.0f); without evidence ours is bounded by DelayCap (%v) instead. A DelayCap under that ~15 s worst "+
			"case trades attempts for lateness (try -delay-cap 13s); with evidence ours is %.2f s at p99",
			pythonHeartbeat, pythonBase, hb.Attempts, outage, ours.Attempts, gocql.Attempts, cfg.Reconnect.DelayCap, row(OursEvidence).P99)
	case strings.HasPrefix(c.ID, CheckBlindVsPrefix):
		id := strings.TrimPrefix(c.ID, CheckBlindVsPrefix)
		return fmt.Sprintf("at %s ours' blind schedule (%s) leaves wider gaps than %s's (%.0f attempts per outage against %.0f)",
			outage, describePolicy(cfg.Reconnect), id, row(Ours).Attempts, row(id).Attempts)
	case c.ID == CheckBlindCap:
		return "a blind wait exceeded DelayCap: the cap in reconnect.Recovery is broken"
	case strings.HasPrefix(c.ID, CheckAttemptsPre):
		id := strings.TrimPrefix(c.ID, CheckAttemptsPre)
		r, g := row(id), row(Gocql)
		from := "no outage length of this run"
		for _, o := range cfg.Outages {
			ro, _ := res.Row(o.Seconds(), id)
			go_, _ := res.Row(o.Seconds(), Gocql)
			if ro.Attempts <= go_.Attempts/attemptsFraction {
				from = shortDuration(o)
				break
			}
		}
		return fmt.Sprintf("the blind schedule (%s) starts dense so that a planned 5–10 s restart is back within about 3 s without "+
			"evidence, so a %s outage costs %.1f attempts against gocql's %.1f (%.2f of it; in dials %.2f, as gocql dials %d addresses "+
			"a sweep); evidence arrives only after the cluster is back, so it cannot cut them. The ratio is at or below 1/%d from %s on",
			describePolicy(cfg.Reconnect), outage, r.Attempts, g.Attempts, r.Attempts/g.Attempts, r.Dials/g.Dials,
			cfg.Nodes+cfg.ContactPoints, attemptsFraction, from)
	}
	return "not met"
}
