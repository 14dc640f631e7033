import { Injectable } from '@nestjs/common';
import { ChatCompletionParams, ServiceError } from '@trainyard/contracts';
import { JsonSchemaChecker } from '@trainyard/engine/wire';

/**
 * The JSON schemas of a completion (tool parameters, a json_schema response_format), checked
 * against the grammar compiler the inference workers use before the completion is queued: a
 * schema that cannot be compiled is a 400 naming its field, answered at once.
 */
@Injectable()
export class SchemaValidation {
  private readonly checker = new JsonSchemaChecker();

  async check(params: ChatCompletionParams): Promise<void> {
    for (const [i, tool] of (params.tools ?? []).entries()) {
      const schema = tool.function.parameters;
      if (schema === undefined) continue;
      const problem = await this.checker.problem(schema);
      if (problem) throw ServiceError.invalid(`tools[${i}].function.parameters ${problem}`, `tools[${i}].function.parameters`);
    }
    const format = params.response_format;
    if (format.type === 'json_schema' && format.json_schema.schema !== undefined) {
      const problem = await this.checker.problem(format.json_schema.schema);
      if (problem) throw ServiceError.invalid(`response_format.json_schema.schema ${problem}`, 'response_format');
    }
  }
}
