package pulsar

import "fmt"

// A Pulsar message ID is (ledger, entry, batch index) within a partition.
// The driver seam wants one integer that increases along a partition's
// log (drivers.Position), so the driver packs the three into 63 bits:
//
//	ledger (27 bits) | entry (24 bits) | batch index (12 bits)
//
// Ledger IDs increase as a topic rolls over to new ledgers, entries
// increase within a ledger, and batch indexes within an entry, so the
// packed value keeps the log's order exactly. An ID that does not fit is
// refused with an error, never wrapped: a wrong position could make the
// verifier call a message reordered or read when it was not. The limits
// (134M ledgers, 16.7M entries per ledger, 4096 messages per batch) are
// far above a test cluster's and above Pulsar's defaults
// (managedLedgerMaxEntriesPerLedger 50,000; batchingMaxMessages 1,000).
const (
	batchBits  = 12
	entryBits  = 24
	ledgerBits = 27

	maxBatch  = 1<<batchBits - 1
	maxEntry  = 1<<entryBits - 1
	maxLedger = 1<<ledgerBits - 1
)

// Pack turns a message ID into a position. A batch index of -1 (a message
// sent without batching, alone in its entry) packs as 0.
func Pack(ledger, entry int64, batch int32) (int64, error) {
	if batch < 0 {
		batch = 0
	}
	if ledger < 0 || ledger > maxLedger || entry < 0 || entry > maxEntry || batch > maxBatch {
		return -1, fmt.Errorf("message ID (%d:%d:%d) does not fit ackcheck's position (ledger < 2^%d, entry < 2^%d, batch index < 2^%d)",
			ledger, entry, batch, ledgerBits, entryBits, batchBits)
	}
	return ledger<<(entryBits+batchBits) | entry<<batchBits | int64(batch), nil
}

// Unpack is Pack's inverse.
func Unpack(pos int64) (ledger, entry int64, batch int32) {
	return pos >> (entryBits + batchBits), (pos >> batchBits) & maxEntry, int32(pos & maxBatch)
}

// afterEntry is the first position past every message of entry (ledger,
// entry), whatever its batch size.
func afterEntry(ledger, entry int64) (int64, error) {
	p, err := Pack(ledger, entry, maxBatch)
	if err != nil {
		return -1, err
	}
	return p + 1, nil
}
