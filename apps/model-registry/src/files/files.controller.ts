import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  CreateFileRequest,
  DeleteFileReply,
  FileContentReply,
  FileRecord,
  FileRequest,
  ListFilesReply,
  ListFilesRequest,
  Subjects,
} from '@trainyard/contracts';
import { FilesService } from './files.service';

@Controller()
export class FilesController {
  constructor(private readonly files: FilesService) {}

  @MessagePattern(Subjects.registry.createFile.name)
  create(@Payload() request: CreateFileRequest): Promise<FileRecord> {
    return this.files.create(request);
  }

  @MessagePattern(Subjects.registry.listFiles.name)
  list(@Payload() request: ListFilesRequest): Promise<ListFilesReply> {
    return this.files.list(request);
  }

  @MessagePattern(Subjects.registry.getFile.name)
  get(@Payload() request: FileRequest): Promise<FileRecord> {
    return this.files.get(request);
  }

  @MessagePattern(Subjects.registry.getFileContent.name)
  content(@Payload() request: FileRequest): Promise<FileContentReply> {
    return this.files.content(request);
  }

  @MessagePattern(Subjects.registry.deleteFile.name)
  delete(@Payload() request: FileRequest): Promise<DeleteFileReply> {
    return this.files.delete(request);
  }
}
