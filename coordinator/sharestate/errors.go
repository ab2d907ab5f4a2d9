package sharestate

import (
	"errors"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The Kafka error codes the coordinator answers with.
var (
	errUnknownServer       = kerr.UnknownServerError.Code
	errUnknownTopicOrPart  = kerr.UnknownTopicOrPartition.Code
	errCoordinatorNotAvail = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator      = kerr.NotCoordinator.Code
	errLoadInProgress      = kerr.CoordinatorLoadInProgress.Code
	errInvalidRequest      = kerr.InvalidRequest.Code
	errFencedLeaderEpoch   = kerr.FencedLeaderEpoch.Code
	errFencedStateEpoch    = kerr.FencedStateEpoch.Code
)

// The messages of Kafka's ShareCoordinatorShard.
const (
	msgNegativePartition = "The partition id cannot be a negative number."
	msgNegativeLeader    = "The leader epoch cannot be a negative number."
	msgNegativeState     = "The state epoch cannot be a negative number."
	msgWriteUninit       = "Write operation on uninitialized share partition not allowed."
	msgReadUninit        = "Read operation on uninitialized share partition not allowed."
)

// appendErrorCode maps a failed append to __share_group_state to the code
// Kafka answers (CoordinatorOperationExceptionHelper.handleOperationException).
func appendErrorCode(err error) int16 {
	switch code := errorCode(err); code {
	case errUnknownTopicOrPart, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return errCoordinatorNotAvail
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return errUnknownServer
	case kerr.NetworkException.Code:
		return errLoadInProgress
	case 0:
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

// description is Kafka's message for an error code.
func description(code int16) string {
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Description
	}
	return ""
}
