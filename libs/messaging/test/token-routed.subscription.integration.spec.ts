import { startNatsServer, TestNatsServer } from '@trainyard/testing';
import { connect, NatsConnection, StringCodec } from 'nats';
import { TokenRoutedSubscription } from '../src';

const text = StringCodec();

describe('TokenRoutedSubscription against a real nats-server', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  let sender: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    sender = await connect({ servers: nats.url });
  });

  afterAll(async () => {
    await nc.close();
    await sender.close();
    await nats.stop();
  });

  it('hands each message to the route of its token, drops those of removed routes, and ends the rest on close', async () => {
    const routes = new TokenRoutedSubscription(nc, 'test.routed');
    await nc.flush();
    const seen: string[] = [];
    const ended: string[] = [];
    const route = (name: string) => ({ message: (msg: { data: Uint8Array }) => seen.push(`${name}:${text.decode(msg.data)}`), ended: () => ended.push(name) });
    const stopA = routes.add('a', route('a'));
    routes.add('b', route('b'));
    sender.publish(routes.subject('a'), text.encode('1'));
    sender.publish(routes.subject('b'), text.encode('2'));
    sender.publish(routes.subject('nobody'), text.encode('3'));
    await sender.flush();
    await nc.flush();
    expect(seen).toEqual(['a:1', 'b:2']);

    stopA();
    expect(routes.size).toBe(1);
    sender.publish(routes.subject('a'), text.encode('late'));
    await sender.flush();
    await nc.flush();
    expect(seen).toEqual(['a:1', 'b:2']);

    routes.close();
    expect(ended).toEqual(['b']);
    expect(routes.size).toBe(0);
  });
});
