package group

import (
	"cmp"
	"slices"
)

// claim is a member's word that it owns partitions, from its subscription.
type claim struct {
	member     string
	owned      Assignment
	generation int32
}

// owners resolves the members' claims to one owner per partition. Two
// claims on one partition mean one member missed a rebalance (its session
// ended during a long pause and it came back believing it still owns what
// it had): the claim from the later generation is the current one, as the
// Java assignors decide. Claims from the same generation should not
// happen; the first member by id keeps it, so the answer is the same on
// every leader.
func owners(claims []claim) map[string]map[int]string {
	claims = slices.Clone(claims)
	slices.SortFunc(claims, func(a, b claim) int {
		return cmp.Or(cmp.Compare(b.generation, a.generation), cmp.Compare(a.member, b.member))
	})
	out := map[string]map[int]string{}
	for _, c := range claims {
		for t, ps := range c.owned {
			if out[t] == nil {
				out[t] = map[int]string{}
			}
			for _, p := range ps {
				if _, taken := out[t][p]; !taken {
					out[t][p] = c.member
				}
			}
		}
	}
	return out
}

// withhold makes a plan safe for the cooperative protocol (KIP-429): a
// partition the plan gives to a member other than its current owner is
// left out of this round, so no two members read it at once. The owner,
// finding it missing from its assignment, stops it (its open batch written
// or handed over), rejoins, and the follow-up rebalance, where nobody owns
// it any more, gives it to the planned member. Owners that left the group
// have no claim here, so their partitions move at once. It returns how many
// partitions were withheld.
func withhold(plan map[string]Assignment, claims []claim) int {
	owner := owners(claims)
	moving := 0
	for member, a := range plan {
		for t, ps := range a {
			kept := ps[:0]
			for _, p := range ps {
				if o, ok := owner[t][p]; ok && o != member {
					moving++
					continue
				}
				kept = append(kept, p)
			}
			a[t] = kept
		}
		plan[member] = a
	}
	return moving
}
