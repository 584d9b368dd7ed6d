import type { Channel, ChannelModel } from "amqplib";

/**
 * What keeps one channel of its own on the bus's connection (the publisher's, the RPC client's): opened on
 * every new connection (`open`) or on demand (`openOnce`, one opening at a time), forgotten when it closes,
 * when the connection goes (`detach`), or when its user finds it broken (`forget`).
 */
export abstract class ChannelHolder<C extends Channel> {
  private current: C | undefined;
  private opening: Promise<C> | undefined;

  get channel(): C | undefined {
    return this.current;
  }

  /** Makes a channel ready on `connection`: its listeners, its consumers. */
  protected abstract create(connection: ChannelModel): Promise<C>;

  /** The channel in use closed. */
  protected closed(): void {}

  /** Opens the channel; the bus does so on every new connection. */
  async open(connection: ChannelModel): Promise<C> {
    const channel = await this.create(connection);
    channel.on("close", () => {
      if (this.current !== channel) return;
      this.current = undefined;
      this.closed();
    });
    this.current = channel;
    return channel;
  }

  /** The connection is gone, and the channel with it. */
  detach(): void {
    this.current = undefined;
  }

  /** Opens the channel on `connection`, or joins the opening under way. */
  protected openOnce(connection: ChannelModel): Promise<C> {
    this.opening ??= this.open(connection).finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  /** Never hands `channel` out again (a publish on it failed before its close event arrived). */
  protected forget(channel: C): void {
    if (this.current === channel) this.current = undefined;
  }
}
