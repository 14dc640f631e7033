import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  StreamableFile,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { DeleteFileReply, FileRecord, ListFilesReply, ServiceError, Subjects } from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import type { Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { IdempotencyInterceptor } from '../idempotency/idempotency.interceptor';
import { scopeOf } from '../registry/caller-scope';
import { ListFilesQuery } from './dto/list-files.query';
import { UploadFileRequest } from './dto/upload-file.request';
import { attachmentDisposition, isAcceptableFilename } from './filenames';
import { UploadLimitInterceptor } from './upload-limit.interceptor';

/** The part of multer's file object this controller uses (multer's own types are not installed). */
interface UploadedFilePart {
  originalname: string;
  buffer: Buffer;
}

/** OpenAI-compatible files: uploads travel to the registry as blobs, never inside a NATS message. */
@Controller('v1/files')
export class FilesController {
  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
  ) {}

  @Post()
  @HttpCode(200)
  // Idempotency innermost: it must see the parsed file to fingerprint the request.
  @UseInterceptors(UploadLimitInterceptor, FileInterceptor('file'), IdempotencyInterceptor)
  async upload(
    @CallerParam() caller: Caller,
    @Body() body: UploadFileRequest,
    @UploadedFile() file: UploadedFilePart | undefined,
  ): Promise<FileRecord> {
    if (!file) {
      throw ServiceError.validation([{ loc: ['body', 'file'], msg: 'file is required (a multipart part named "file")', type: 'missing' }]);
    }
    if (!isAcceptableFilename(file.originalname)) {
      throw ServiceError.validation([
        { loc: ['body', 'file', 'filename'], msg: 'the filename must be 1 to 255 characters, none of them control characters', type: 'filename' },
      ]);
    }
    const content = await this.blobs.put(file.buffer);
    return this.rpc.request(Subjects.registry.createFile, {
      ...scopeOf(caller),
      filename: file.originalname,
      purpose: body.purpose,
      content,
    });
  }

  @Get()
  list(@CallerParam() caller: Caller, @Query() query: ListFilesQuery): Promise<ListFilesReply> {
    return this.rpc.request(Subjects.registry.listFiles, { ...scopeOf(caller), purpose: query.purpose });
  }

  @Get(':file_id')
  get(@CallerParam() caller: Caller, @Param('file_id') fileId: string): Promise<FileRecord> {
    return this.rpc.request(Subjects.registry.getFile, { ...scopeOf(caller), file_id: fileId });
  }

  @Get(':file_id/content')
  async content(
    @CallerParam() caller: Caller,
    @Param('file_id') fileId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    const { file, content } = await this.rpc.request(Subjects.registry.getFileContent, { ...scopeOf(caller), file_id: fileId });
    const bytes = await this.blobs.take(content);
    res.setHeader('content-disposition', attachmentDisposition(file.filename));
    return new StreamableFile(bytes, { type: 'application/octet-stream', length: bytes.length });
  }

  @Delete(':file_id')
  delete(@CallerParam() caller: Caller, @Param('file_id') fileId: string): Promise<DeleteFileReply> {
    return this.rpc.request(Subjects.registry.deleteFile, { ...scopeOf(caller), file_id: fileId });
  }
}
