// Package dialgate is the decision core of the dial governor that controlconn installs: for
// each dial, by the address dialled, whether it passes, takes a known-down host's slot or the
// client-wide budget, or is refused (a Verdict), and for each connection setup to a returning
// host, how its end moves that host's setup limit and pause. No clock, no goroutine, no lock:
// the caller passes the time in and serialises the calls, so the governed dialers of package
// core (under one mutex) and the lab's virtual-time process drive the same code call for call.
//
// Its interface is four verbs over one record per host: Observe (our connection up, down or
// lost; a host up, seen up, down; a pool empty), Admit and Done (a dial of a Kind, before and
// after), and SetupDone (a setup's end). The rules are documented for users on
// controlconn.Governor and in docs/governor.md.
package dialgate
