package dev.gregor.demo;

/**
 * The event the demo sends and receives, as JSON on the wire. A quantity
 * below one is a poison event: {@link OrderListener} rejects it, and the
 * error handler sends it to the dead-letter topic.
 */
public record OrderEvent(int id, String item, int quantity) {
}
