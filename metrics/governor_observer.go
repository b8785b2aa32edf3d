package metrics

import "time"

// GovernorDecided (controlconn.Observer.GovernorDecided): one dial decided on, or evidence.
// A verdict not known in advance gets its own series.
func (c *Collectors) GovernorDecided(verdict string) {
	if verdict == "evidence" {
		c.governorEvidence.Inc()
		return
	}
	if m, ok := c.governorVerdicts[verdict]; ok {
		m.Inc()
		return
	}
	c.governorDials.WithLabelValues(verdict).Inc()
}

// GovernorSetup (controlconn.Observer.GovernorSetup): one of the driver's connection setups ended.
func (c *Collectors) GovernorSetup(outcome string, took time.Duration) {
	c.governorSetup.WithLabelValues(outcome).Observe(seconds(took))
}

// GovernorInterval (controlconn.Observer.GovernorInterval): the budget's current interval.
func (c *Collectors) GovernorInterval(d time.Duration) { c.governorInterval.Set(seconds(d)) }
