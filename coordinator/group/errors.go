package group

import (
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The Kafka error codes the coordinator answers with.
var (
	errUnknownServer          = kerr.UnknownServerError.Code
	errUnknownTopicOrPart     = kerr.UnknownTopicOrPartition.Code
	errCoordinatorNotAvail    = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator         = kerr.NotCoordinator.Code
	errLoadInProgress         = kerr.CoordinatorLoadInProgress.Code
	errIllegalGeneration      = kerr.IllegalGeneration.Code
	errInconsistentProtocol   = kerr.InconsistentGroupProtocol.Code
	errUnknownMemberID        = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout  = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress    = kerr.RebalanceInProgress.Code
	errInvalidGroupID         = kerr.InvalidGroupID.Code
	errOffsetMetadataTooLarge = kerr.OffsetMetadataTooLarge.Code
	errNonEmptyGroup          = kerr.NonEmptyGroup.Code
	errGroupIDNotFound        = kerr.GroupIDNotFound.Code
	errMemberIDRequired       = kerr.MemberIDRequired.Code
	errFencedInstanceID       = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached    = kerr.GroupMaxSizeReached.Code
	errSubscribedToTopic      = kerr.GroupSubscribedToTopic.Code
	errUnstableOffsetCommit   = kerr.UnstableOffsetCommit.Code

	errInvalidRequest           = kerr.InvalidRequest.Code
	errUnsupportedVersion       = kerr.UnsupportedVersion.Code
	errFencedMemberEpoch        = kerr.FencedMemberEpoch.Code
	errStaleMemberEpoch         = kerr.StaleMemberEpoch.Code
	errUnreleasedInstanceID     = kerr.UnreleasedInstanceID.Code
	errStreamsInvalidTopology   = kerr.StreamsInvalidTopology.Code
	errUnsupportedAssignor      = kerr.UnsupportedAssignor.Code
	errInvalidRegularExpression = kerr.InvalidRegularExpression.Code
)

// appendErrorCode maps a failed append to __consumer_offsets to the code
// Kafka answers with (GroupMetadataManager.appendGroupMetadataErrorToResponseError).
func appendErrorCode(err error) int16 {
	switch code := logstore.ErrorCode(err); code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return errCoordinatorNotAvail
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return errNotCoordinator
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return errUnknownServer
	default:
		return code
	}
}
