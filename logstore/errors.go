package logstore

import (
	"errors"
	"fmt"
)

// Kafka error codes this package returns.
const (
	CodeUnknownServerError           int16 = -1
	CodeOffsetOutOfRange             int16 = 1
	CodeCorruptMessage               int16 = 2
	CodeReplicaNotAvailable          int16 = 9
	CodeInvalidTopic                 int16 = 17
	CodeRecordListTooLarge           int16 = 18
	CodeOutOfOrderSequenceNumber     int16 = 45
	CodeInvalidProducerEpoch         int16 = 47
	CodeInvalidTxnState              int16 = 48
	CodeTransactionCoordinatorFenced int16 = 52
	CodeKafkaStorageError            int16 = 56
	CodeLogDirNotFound               int16 = 57
	CodeInvalidReplicaAssignment     int16 = 39
)

// Error is an error with the Kafka error code a response should carry.
type Error struct {
	Code  int16
	Msg   string
	Cause error // the underlying failure, if any
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Cause }

func errorf(code int16, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// storageErr wraps an I/O failure as KAFKA_STORAGE_ERROR.
func storageErr(op string, err error) error {
	return &Error{Code: CodeKafkaStorageError, Msg: op + ": " + err.Error(), Cause: err}
}

// ErrorCode is the Kafka error code for err: 0 for nil, the code of an
// *Error anywhere in its chain, and UNKNOWN_SERVER_ERROR (-1) otherwise.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeUnknownServerError
}
