import { DynamicModule, Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { GatewayConfig } from '../config/gateway.config';
import { RegistryModule } from '../registry/registry.module';
import { FilesController } from './files.controller';
import { UploadLimitInterceptor } from './upload-limit.interceptor';

/**
 * POST/GET/DELETE /v1/files. Uploads are held in memory up to MAX_UPLOAD_BYTES, then parked as a
 * blob. Filenames are read as UTF-8, as clients send them (multer's default, latin1, garbles any
 * name that is not ASCII).
 */
@Module({})
export class FilesModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: FilesModule,
      imports: [MulterModule.register({ limits: { fileSize: config.MAX_UPLOAD_BYTES, files: 1 }, defParamCharset: 'utf8' }), RegistryModule],
      controllers: [FilesController],
      providers: [{ provide: GatewayConfig, useValue: config }, UploadLimitInterceptor],
    };
  }
}
