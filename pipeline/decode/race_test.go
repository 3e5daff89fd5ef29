//go:build race

package decode

// raceEnabled: the race detector makes sync.Pool drop what it is given at
// random, and with it the decoder's pooled state.
const raceEnabled = true
