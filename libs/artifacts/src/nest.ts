export { ArtifactsModule } from './artifacts.module';
