package txn

import (
	"errors"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The Kafka error codes the coordinator answers with.
var (
	errUnknownServer         = kerr.UnknownServerError.Code
	errUnknownTopicOrPart    = kerr.UnknownTopicOrPartition.Code
	errCoordinatorNotAvail   = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator        = kerr.NotCoordinator.Code
	errLoadInProgress        = kerr.CoordinatorLoadInProgress.Code
	errInvalidRequest        = kerr.InvalidRequest.Code
	errInvalidTxnTimeout     = kerr.InvalidTransactionTimeout.Code
	errConcurrentTxns        = kerr.ConcurrentTransactions.Code
	errInvalidPIDMapping     = kerr.InvalidProducerIDMapping.Code
	errInvalidProducerEpoch  = kerr.InvalidProducerEpoch.Code
	errProducerFenced        = kerr.ProducerFenced.Code
	errInvalidTxnState       = kerr.InvalidTxnState.Code
	errTransactionAbortable  = kerr.TransactionAbortable.Code
	errTxnIDNotFound         = kerr.TransactionalIDNotFound.Code
	errInvalidRegex          = kerr.InvalidRegularExpression.Code
	errNotLeader             = kerr.NotLeaderForPartition.Code
	errNotEnoughReplicas     = kerr.NotEnoughReplicas.Code
	errNotEnoughReplicasPost = kerr.NotEnoughReplicasAfterAppend.Code
	errRequestTimedOut       = kerr.RequestTimedOut.Code
	errStorage               = kerr.KafkaStorageError.Code
	errUnsupportedForFormat  = kerr.UnsupportedForMessageFormat.Code
	errUnsupportedVersion    = kerr.UnsupportedVersion.Code
	errCoordinatorFenced     = kerr.TransactionCoordinatorFenced.Code
)

// appendErrorCode maps a failed append to __transaction_state to the code
// Kafka answers with (TransactionStateManager.appendTransactionToLog).
func appendErrorCode(err error) int16 {
	switch code := errorCode(err); code {
	case errUnknownTopicOrPart, errNotEnoughReplicas, errNotEnoughReplicasPost, errRequestTimedOut:
		return errCoordinatorNotAvail
	case errNotLeader, errStorage:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		return errUnknownServer
	default:
		return code
	}
}

// errorCode is the Kafka code of err: a kerr.Error's, a logstore.Error's,
// or UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return logstore.ErrorCode(err)
}

// errGone: the partition was unloaded.
var errGone = errors.New("partition no longer ours")
