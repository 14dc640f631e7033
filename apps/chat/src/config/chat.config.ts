import { BaseServiceConfig } from '@trainyard/runtime';

export class ChatConfig extends BaseServiceConfig {
  override HTTP_PORT = 3101;
}
