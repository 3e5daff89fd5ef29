//go:build race

package fetch

// raceEnabled: the race detector drops some of what a sync.Pool is given.
const raceEnabled = true
