package ledger

import "github.com/ackcheck/ackcheck/drivers"

// Offsets is an offset per partition (a run's start offsets, a
// read-back's ends) as the ledger's metadata keeps it: the drivers'
// own, indexed by partition. Its JSON is an object ({"0":12,"1":40}, what
// older ledgers hold) up to 1,000 partitions and runs [first, count,
// offset] beyond (drivers.Offsets.MarshalJSON); both read.
type Offsets = drivers.Offsets
