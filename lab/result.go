package lab

import (
	"encoding/json"
	"io"
)

// Result is one lab run. Times are in seconds, so that the JSON reads without units arithmetic.
type Result struct {
	Model      []string       `json:"model"` // what is simulated, one statement a line
	Config     Settings       `json:"config"`
	Strategies []StrategyInfo `json:"strategies"`
	Rows       []Row          `json:"rows"`   // by outage length, then strategy
	Checks     []Check        `json:"checks"` // the claims the lab exists to show
}

// Settings are the numbers a run used, defaults filled in.
type Settings struct {
	Outages        []float64 `json:"outages_s"`
	Samples        int       `json:"samples"`
	Spread         float64   `json:"spread"`
	Fleet          int       `json:"fleet"`
	Nodes          int       `json:"nodes"`
	ContactPoints  int       `json:"contact_points"`
	DialTime       float64   `json:"dial_time_s"`
	EvidenceDelay  float64   `json:"evidence_delay_s"`
	Seed           uint64    `json:"seed"`
	Policy         string    `json:"policy"`
	DelayCap       float64   `json:"delay_cap_s"`
	MinReArm       float64   `json:"min_rearm_interval_s"`
	StableAfter    float64   `json:"stable_after_s"`
	HistogramsKept bool      `json:"histograms_kept"`
}

// Row is one strategy at one nominal outage length. Lateness is the time from the cluster being
// ready to the start of the dial that reconnects; its statistics are over Samples outages, each
// with its own length (drawn around the nominal one) and its own jitter.
type Row struct {
	Outage      float64 `json:"outage_s"` // nominal length
	Strategy    string  `json:"strategy"`
	P50         float64 `json:"p50_s"`
	P99         float64 `json:"p99_s"`
	Max         float64 `json:"max_s"`
	Attempts    float64 `json:"attempts_mean"` // per outage, the reconnecting one included
	AttemptsMax int     `json:"attempts_max"`
	Dials       float64 `json:"dials_mean"` // attempts × addresses dialled
	Fleet       Fleet   `json:"fleet"`
	// Governed is set on the governed process's row (strategy Governed) only.
	Governed *GovernedFigures `json:"governed,omitempty"`
}

// Fleet is what the cluster sees from Clients clients that all lost it at t=0, with independent
// jitter and phases, when it is ready at exactly the nominal length. Rates are per 1 s bucket.
type Fleet struct {
	Clients         int     `json:"clients"`
	AtLoss          int     `json:"at_loss"`           // attempts in the first second, every immediate one among them
	PeakDown        int     `json:"peak_down_per_s"`   // busiest second while down, the first excluded
	LastMinute      float64 `json:"last_minute_per_s"` // mean rate over the last minute down (last half if shorter)
	PeakReturn      int     `json:"peak_return_per_s"` // busiest second from the moment it is ready
	PeakDownDials   int     `json:"peak_down_dials_per_s"`
	PeakReturnDials int     `json:"peak_return_dials_per_s"`
	AllBack         float64 `json:"all_back_s"` // from ready to the last client's reconnecting dial

	// Per-second histograms, kept only when Config.Histograms is set: from the loss until ready,
	// and from ready until every client is back.
	Down        []int `json:"down_attempts,omitempty"`
	DownDials   []int `json:"down_dials,omitempty"`
	Return      []int `json:"return_attempts,omitempty"`
	ReturnDials []int `json:"return_dials,omitempty"`
}

// Check is one claim of the lab at one outage length, and whether the run met it.
type Check struct {
	ID     string  `json:"id"`
	Claim  string  `json:"claim"`
	Outage float64 `json:"outage_s"`
	Value  float64 `json:"value"`
	Bound  float64 `json:"bound"` // met when Value <= Bound
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"` // why, when not met
}

// Row returns the row of a strategy at a nominal outage length (in seconds).
func (r *Result) Row(outage float64, strategy string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Outage == outage && row.Strategy == strategy {
			return row, true
		}
	}
	return Row{}, false
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
