package broker

import "github.com/twmb/franz-go/pkg/kerr"

// Kafka error codes used across handlers, named as Kafka names them.
var (
	errUnsupportedVersion       = kerr.UnsupportedVersion.Code
	errRebootstrapRequired      = kerr.RebootstrapRequired.Code
	errUnknownTopicOrPartition  = kerr.UnknownTopicOrPartition.Code
	errUnknownTopicID           = kerr.UnknownTopicID.Code
	errInvalidTopic             = kerr.InvalidTopicException.Code
	errTopicAlreadyExists       = kerr.TopicAlreadyExists.Code
	errInvalidPartitions        = kerr.InvalidPartitions.Code
	errInvalidReplicationFactor = kerr.InvalidReplicationFactor.Code
	errInvalidReplicaAssignment = kerr.InvalidReplicaAssignment.Code
	errInvalidConfig            = kerr.InvalidConfig.Code
	errInvalidRequest           = kerr.InvalidRequest.Code
	errOffsetOutOfRange         = kerr.OffsetOutOfRange.Code
	errOffsetNotAvailable       = kerr.OffsetNotAvailable.Code
	errMessageTooLarge          = kerr.MessageTooLarge.Code
	errInvalidRequiredAcks      = kerr.InvalidRequiredAcks.Code
	errFencedLeaderEpoch        = kerr.FencedLeaderEpoch.Code
	errUnknownLeaderEpoch       = kerr.UnknownLeaderEpoch.Code
	errFetchSessionIDNotFound   = kerr.FetchSessionIDNotFound.Code
	errInvalidFetchSessionEpoch = kerr.InvalidFetchSessionEpoch.Code
	errFetchSessionTopicID      = kerr.FetchSessionTopicIDError.Code
	errUnknownServerError       = kerr.UnknownServerError.Code
	errUnsupportedEndpointType  = kerr.UnsupportedEndpointType.Code
	errMismatchedEndpointType   = kerr.MismatchedEndpointType.Code
	errTxnIDAuthFailed          = kerr.TransactionalIDAuthorizationFailed.Code
	errNotLeaderOrFollower      = kerr.NotLeaderForPartition.Code
	errKafkaStorageError        = kerr.KafkaStorageError.Code
	errNotEnoughReplicas        = kerr.NotEnoughReplicas.Code
	errNotEnoughReplicasAfter   = kerr.NotEnoughReplicasAfterAppend.Code
	errRequestTimedOut          = kerr.RequestTimedOut.Code
	errLeaderNotAvailable       = kerr.LeaderNotAvailable.Code
	errListenerNotFound         = kerr.ListenerNotFound.Code
	errReplicaNotAvailable      = kerr.ReplicaNotAvailable.Code
	errCoordinatorNotAvailable  = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator           = kerr.NotCoordinator.Code
	errOperationNotAttempted    = kerr.OperationNotAttempted.Code
	errThrottlingQuotaExceeded  = kerr.ThrottlingQuotaExceeded.Code
	errShareSessionNotFound     = kerr.ShareSessionNotFound.Code
	errInvalidShareSessionEpoch = kerr.InvalidShareSessionEpoch.Code
	errElectionNotNeeded        = kerr.ElectionNotNeeded.Code
	errNoReassignmentInProgress = kerr.NoReassignmentInProgress.Code
	errTopicDeletionDisabled    = kerr.TopicDeletionDisabled.Code
)

// errorMessageText is a code's Kafka name and description, for logs.
func errorMessageText(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return "NONE"
}

// errorMessage is the text Kafka's responses carry beside a code when
// nothing more is said: the error's default message (Errors.message()),
// "The group is not empty.", without its name.
func errorMessage(code int16) *string {
	if code == 0 {
		return nil
	}
	var msg string
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		msg = e.Description
	} else {
		msg = kerr.ErrorForCode(code).Error()
	}
	return &msg
}
