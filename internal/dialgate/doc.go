// Package dialgate is the decision core of the dial governor that controlconn.WithDialGovernor
// installs: for each dial, by the address dialled, whether it passes, takes a known-down host's
// slot or the client-wide budget, or is refused (a Verdict), from what the gate was told of our
// connection (up, down, lost) and of the hosts (up, down, the outcome of earlier dials). No
// clock, no goroutine, no lock: the caller passes the time in and serialises the calls, so the
// governed dialers of package controlconn (under one mutex) and the lab's virtual-time process
// drive the same code call for call.
//
// The rules it applies are documented for users on controlconn.Governor, with the defaults of
// its Config; each method here says which of them it implements.
package dialgate
